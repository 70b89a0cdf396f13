package mysql

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/internal/certs"
	"github.com/sandboxer/sandboxer/state"
)

// With TLSArgs the server takes TLS logins verified against the
// instance's own CA and refuses plain ones.
func TestTLS(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	m, err := certs.New("mysql", []string{"127.0.0.1", "localhost"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	in := startInstanceTLS(ctx, t, nil, m)
	c := in.creds
	tlsConf, err := c.ClientTLS(c.Host)
	if err != nil {
		t.Fatal(err)
	}
	h, err := Open(c.Host, c.Port, c.User, c.Password, c.Database, tlsConf)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var cipher, version string
	if err := h.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Ssl_version'").Scan(&cipher, &version); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(version, "TLSv1.") {
		t.Errorf("Ssl_version = %q, want TLS", version)
	}
	if err := Ping(ctx, c.Host, c.Port, c.User, c.Password, c.Database, nil); err == nil {
		t.Error("a plain login was accepted")
	}
	other, err := certs.New("mysql", []string{"127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	wrong, _ := state.Credentials{CA: string(other.CAPEM)}.ClientTLS(c.Host)
	if err := Ping(ctx, c.Host, c.Port, c.User, c.Password, c.Database, wrong); err == nil {
		t.Error("a login trusting another CA was accepted")
	}
}
