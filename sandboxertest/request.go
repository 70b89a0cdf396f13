package sandboxertest

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/internal/testenv"
)

// Sandbox is a requested instance: its address, key and credentials, with
// the api.Sandbox accessors (URL, Host, Port, User, Password, Database)
// per service.
type Sandbox struct {
	*api.Sandbox
	// Key is the instance key used (derived unless Key was given).
	Key string
}

// PostgresURL is the PostgreSQL connection URL.
func (s *Sandbox) PostgresURL() string { return s.URL("postgres") }

// RedisURL is the Redis connection URL.
func (s *Sandbox) RedisURL() string { return s.URL("redis") }

// MySQLURL is the MySQL (MariaDB) connection URL,
// mysql://user:password@host:port/database; go-sql-driver/mysql takes
// the same parts as user:password@tcp(host:port)/database.
func (s *Sandbox) MySQLURL() string { return s.URL("mysql") }

// ValkeyURL is the Valkey connection URL (redis://, as Valkey's clients
// and go-redis take it).
func (s *Sandbox) ValkeyURL() string { return s.URL("valkey") }

// Setenv exports the sandbox's variables (SANDBOXER_POSTGRES_URL, …) for
// the rest of the test, for code under test that reads the environment.
func (s *Sandbox) Setenv(tb testing.TB) {
	for k, v := range s.Env {
		tb.Setenv(k, v)
	}
}

// Option adjusts a Request.
type Option func(*settings)

type settings struct {
	key        string
	dir        string
	statePath  string
	extensions map[string][]string
	ttl        string
	profile    string
	prefix     string
	keep       *bool
	provider   apply.Provider
	apiURL     string
	apiToken   string
	// apiTokenFile is read at each call when apiToken is empty
	// (SANDBOXER_API_TOKEN_FILE: a pod's rotated ServiceAccount token).
	apiTokenFile string
	timeout      time.Duration
}

// Key names the instance instead of the derived key; tests (even in
// other packages) that give the same key share the instance.
func Key(k string) Option { return func(s *settings) { s.key = k } }

// Dir is the configuration directory (default: the nearest directory,
// from the package's upward, that holds *.sbx.hcl).
func Dir(dir string) Option { return func(s *settings) { s.dir = dir } }

// StatePath overrides the state file (default DIR/.sandboxer/state.db,
// the CLI's, so `sandboxer release` sees the test's instances).
func StatePath(p string) Option { return func(s *settings) { s.statePath = p } }

// Extensions asks for features of one service on top of the project's
// standing set, e.g. Extensions("postgres", "vector").
func Extensions(service string, features ...string) Option {
	return func(s *settings) {
		if s.extensions == nil {
			s.extensions = map[string][]string{}
		}
		s.extensions[service] = append(s.extensions[service], features...)
	}
}

// TTL sets the instance's lifetime from now (default: the block's ttl).
func TTL(d string) Option { return func(s *settings) { s.ttl = d } }

// Profile asks for a named profile of the block's project.
func Profile(name string) Option { return func(s *settings) { s.profile = name } }

// Prefix names the variables of Env (and Setenv) <PREFIX><SERVICE>_URL …
// instead of SANDBOXER_…; the accessors read either.
func Prefix(p string) Option { return func(s *settings) { s.prefix = p } }

// Keep leaves the instance alive after the test, for the next run to
// reuse; the default releases it unless SANDBOXER_KEEP=1.
func Keep() Option { return func(s *settings) { t := true; s.keep = &t } }

// Release releases the instance after the test even when SANDBOXER_KEEP=1.
func Release() Option { return func(s *settings) { f := false; s.keep = &f } }

// Provider uses p instead of the configured engine (library mode only),
// e.g. providers/fake for tests of code that only passes credentials on.
func Provider(p apply.Provider) Option { return func(s *settings) { s.provider = p } }

// API sends the request to a running `sandboxer serve` instead of using
// the library (default: SANDBOXER_API_URL and SANDBOXER_API_TOKEN, or
// SANDBOXER_API_TOKEN_FILE, read at each call).
func API(url, token string) Option {
	return func(s *settings) { s.apiURL, s.apiToken = url, token }
}

// envSettings are the defaults the environment gives.
func envSettings() settings {
	return settings{apiURL: os.Getenv("SANDBOXER_API_URL"), apiToken: os.Getenv("SANDBOXER_API_TOKEN"),
		apiTokenFile: os.Getenv("SANDBOXER_API_TOKEN_FILE"), timeout: 10 * time.Minute}
}

// Timeout bounds the request, provision included (default 10 minutes).
func Timeout(d time.Duration) Option { return func(s *settings) { s.timeout = d } }

// RequireDocker skips the test when no Docker engine answers, and fails
// it instead when SANDBOXER_REQUIRE_DOCKER=1 (set that in CI, so a
// missing engine cannot pass as green).
func RequireDocker(tb testing.TB) {
	tb.Helper()
	testenv.RequireDocker(tb)
}

// Request provisions or reuses an instance of the on-demand block at
// address (sandbox.NAME, or sandbox.NAME["KEY"]) and returns its
// credentials. Any failure fails the test.
func Request(tb testing.TB, address string, opts ...Option) *Sandbox {
	tb.Helper()
	s := envSettings()
	for _, o := range opts {
		o(&s)
	}
	keep := envTrue("SANDBOXER_KEEP")
	if s.keep != nil {
		keep = *s.keep
	}
	if s.key == "" && !strings.Contains(address, "[") {
		k, err := DefaultKey(tb)
		if err != nil {
			tb.Fatalf("sandboxertest: %v", err)
		}
		s.key = k
	}
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	b, err := s.open(ctx)
	if err != nil {
		tb.Fatalf("sandboxertest: %v", err)
	}
	tb.Cleanup(b.close)
	res, err := b.request(ctx, api.RequestBody{Address: address, Key: s.key, Extensions: s.extensions, TTL: s.ttl, Profile: s.profile, Prefix: s.prefix})
	if err != nil {
		tb.Fatalf("sandboxertest: request %s (key %s): %v", address, s.key, err)
	}
	how := "provisioned"
	if res.Reused {
		how = "reused"
	}
	tb.Logf("sandboxertest: %s %s (generation %d, %s)", res.Address, how, res.Generation, b.name())
	if !keep {
		addr := res.Address
		tb.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if _, err := b.release(ctx, addr, ""); err != nil {
				tb.Errorf("sandboxertest: release %s: %v", addr, err)
			}
		})
	}
	return &Sandbox{Sandbox: res, Key: s.key}
}

func envTrue(name string) bool {
	v := os.Getenv(name)
	return v != "" && v != "0" && v != "false"
}
