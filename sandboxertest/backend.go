package sandboxertest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/apiclient"
)

// backend is where requests go: the library or the HTTP API.
type backend interface {
	request(ctx context.Context, body api.RequestBody) (*api.Sandbox, error)
	release(ctx context.Context, address, key string) (bool, error)
	database(ctx context.Context, address string, o sandboxer.DatabaseOptions) (*api.Sandbox, error)
	dropDatabase(ctx context.Context, address, name string) error
	close()
	name() string
}

func (s settings) open(ctx context.Context) (backend, error) {
	if s.apiURL != "" {
		if s.provider != nil {
			return nil, errors.New("Provider works with the library only, but SANDBOXER_API_URL points at an API")
		}
		var opts []apiclient.Option
		if strings.TrimSpace(s.apiToken) == "" && s.apiTokenFile != "" {
			opts = append(opts, apiclient.WithTokenFile(s.apiTokenFile))
		}
		c, err := apiclient.New(s.apiURL, s.apiToken, opts...)
		if err != nil {
			return nil, err
		}
		return apiBackend{c: c, url: s.apiURL}, nil
	}
	dir := s.dir
	if dir == "" {
		var err error
		if dir, err = FindConfigDir("."); err != nil {
			return nil, err
		}
	}
	lib, err := sandboxer.Open(ctx, dir, sandboxer.Options{StatePath: s.statePath, Provider: s.provider})
	if err != nil {
		return nil, err
	}
	return libBackend{lib: lib, dir: dir}, nil
}

type libBackend struct {
	lib *sandboxer.Sandboxer
	dir string
}

func (l libBackend) request(ctx context.Context, b api.RequestBody) (*api.Sandbox, error) {
	return l.lib.Request(ctx, b.Address, sandboxer.RequestOptions{Key: b.Key, Extensions: b.Extensions, TTL: b.TTL, Profile: b.Profile, Prefix: b.Prefix})
}

func (l libBackend) release(ctx context.Context, address, key string) (bool, error) {
	return l.lib.Release(ctx, address, key)
}

func (l libBackend) database(ctx context.Context, address string, o sandboxer.DatabaseOptions) (*api.Sandbox, error) {
	return l.lib.Database(ctx, address, o)
}

func (l libBackend) dropDatabase(ctx context.Context, address, name string) error {
	return l.lib.DropDatabase(ctx, address, name)
}

func (l libBackend) close()       { _ = l.lib.Close() }
func (l libBackend) name() string { return "configuration " + l.dir }

type apiBackend struct {
	c   *apiclient.Client
	url string
}

func (a apiBackend) request(ctx context.Context, b api.RequestBody) (*api.Sandbox, error) {
	return a.c.Request(ctx, b)
}

func (a apiBackend) release(ctx context.Context, address, key string) (bool, error) {
	return a.c.Release(ctx, address, key)
}

func (a apiBackend) database(ctx context.Context, address string, o sandboxer.DatabaseOptions) (*api.Sandbox, error) {
	if o.Migration.Run != nil {
		return nil, errors.New("a Go migration function runs in the library only; give SQL (sandboxertest.Migrations) when SANDBOXER_API_URL points at an API")
	}
	ttl := ""
	if o.TTL > 0 {
		ttl = o.TTL.String()
	}
	return a.c.Database(ctx, api.DatabaseBody{Address: address, SQL: o.SQL, CreateDB: o.CreateDB, TTL: ttl, Prefix: o.Prefix})
}

func (a apiBackend) dropDatabase(ctx context.Context, address, name string) error {
	return a.c.DropDatabase(ctx, address, name)
}

func (a apiBackend) close()       {}
func (a apiBackend) name() string { return "API " + a.url }

// FindConfigDir returns the nearest directory, from start upwards, that
// holds a *.sbx.hcl file.
func FindConfigDir(start string) (string, error) {
	dir, err := filepath.Abs(start)
	if err != nil {
		return "", err
	}
	for {
		if m, _ := filepath.Glob(filepath.Join(dir, "*.sbx.hcl")); len(m) > 0 {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			wd, _ := os.Getwd()
			return "", fmt.Errorf("no *.sbx.hcl in %s or any directory above it; pass sandboxertest.Dir(…) or set SANDBOXER_API_URL", wd)
		}
		dir = parent
	}
}
