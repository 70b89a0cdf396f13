package sandboxer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sandboxer/sandboxer/state"
)

// integreSQL drives an IntegreSQL server (github.com/allaboutapps/
// integresql, v1.1.0: `make bench` installs it from the module proxy)
// over its HTTP API against a host's admin role, for the benchmarks'
// third side. It is its own program: its dependencies (echo, lib/pq)
// stay out of this module.
type integreSQL struct {
	base string
	hc   *http.Client
	hash string
}

// integreSQLDatabase is what GET …/tests answers (the fields used).
type integreSQLDatabase struct {
	ID       int `json:"id"`
	Database struct {
		Config struct {
			Host     string `json:"host"`
			Port     int    `json:"port"`
			Username string `json:"username"`
			Password string `json:"password"`
			Database string `json:"database"`
		} `json:"config"`
	} `json:"database"`
}

// startIntegreSQL runs the binary SANDBOXER_INTEGRESQL_BIN names against
// the host's admin role, stopped at the end of tb; it makes the
// template (sql run as the admin, as IntegreSQL's users migrate) and
// answers nil when the variable is unset.
func startIntegreSQL(tb testing.TB, c state.Credentials, sql []string) *integreSQL {
	bin := os.Getenv("SANDBOXER_INTEGRESQL_BIN")
	if bin == "" {
		tb.Log("SANDBOXER_INTEGRESQL_BIN unset: no IntegreSQL side (make bench installs it)")
		return nil
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "INTEGRESQL_ADDRESS=127.0.0.1", "INTEGRESQL_PORT="+strconv.Itoa(port),
		"INTEGRESQL_PGHOST="+c.Host, "INTEGRESQL_PGPORT="+strconv.Itoa(c.Port),
		"INTEGRESQL_PGUSER="+c.AdminUser, "INTEGRESQL_PGPASSWORD="+c.AdminPassword.Reveal(),
		"INTEGRESQL_PGDATABASE=postgres")
	if err := cmd.Start(); err != nil {
		tb.Fatalf("start IntegreSQL: %v", err)
	}
	tb.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	s := &integreSQL{base: fmt.Sprintf("http://127.0.0.1:%d/api/v1", port), hc: &http.Client{Timeout: time.Minute}, hash: fmt.Sprintf("sbxbench%d", time.Now().UnixNano())}
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	var tpl struct {
		Database struct {
			Config struct {
				Database string `json:"database"`
			} `json:"config"`
		} `json:"database"`
	}
	for {
		err = s.call(ctx, http.MethodPost, "/templates", map[string]string{"hash": s.hash}, &tpl)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			tb.Fatalf("IntegreSQL: initialize the template: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	admin := c
	admin.User, admin.Password, admin.Database = c.AdminUser, c.AdminPassword, tpl.Database.Config.Database
	conn, err := pgx.Connect(ctx, admin.URL("postgres"))
	if err != nil {
		tb.Fatalf("IntegreSQL's template: %v", err)
	}
	for _, q := range sql {
		if _, err := conn.Exec(ctx, q); err != nil {
			tb.Fatal(err)
		}
	}
	conn.Close(ctx)
	if err := s.call(ctx, http.MethodPut, "/templates/"+s.hash, nil, nil); err != nil {
		tb.Fatalf("IntegreSQL: finalize the template: %v", err)
	}
	tb.Cleanup(func() { _ = s.call(context.Background(), http.MethodDelete, "/templates/"+s.hash, nil, nil) })
	return s
}

// take is one test database; done gives it back to be recreated (made
// fresh again in the background), as a test's end does.
func (s *integreSQL) take(ctx context.Context) (*integreSQLDatabase, error) {
	var d integreSQLDatabase
	return &d, s.call(ctx, http.MethodGet, "/templates/"+s.hash+"/tests", nil, &d)
}

func (s *integreSQL) done(ctx context.Context, d *integreSQLDatabase) error {
	return s.call(ctx, http.MethodPost, fmt.Sprintf("/templates/%s/tests/%d/recreate", s.hash, d.ID), nil, nil)
}

func (d *integreSQLDatabase) url() string {
	c := d.Database.Config
	return (&state.Credentials{Host: c.Host, Port: c.Port, User: c.Username, Password: state.Secret(c.Password), Database: c.Database}).URL("postgres")
}

func (s *integreSQL) call(ctx context.Context, method, path string, body, out any) error {
	var rd *bytes.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("IntegreSQL %s %s: %s", method, path, resp.Status)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(resp.Body).Decode(out)
}
