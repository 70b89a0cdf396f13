package mysql

import (
	"context"
	"crypto/tls"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/sandboxer/sandboxer/internal/certs"
	"github.com/sandboxer/sandboxer/services/internal/enginetest"
	"github.com/sandboxer/sandboxer/state"
)

// Service has the first methods of services.Service; the rest (Start,
// Ready, Prober, Rotate, Data, SnapshotFormat, NamesDatabase) come with
// its wiring into the catalogue (docs/services-mysql-valkey.md).
var _ interface {
	Name() string
	Port() int
	Account() string
	StartRank() int
} = Service{}

// testImage is the local image images/build.sh mysql makes.
const testImage = "sandboxer.local/mysql:11.8"

// instance is a running server started the way a runtime starts one: the
// init script in the init directory, the root password in a file named
// by RootPasswordFileEnv, ServerArgs on the command line.
type instance struct {
	ctr   *enginetest.Container
	creds state.Credentials // Host/Port: the published port
	ready time.Duration
}

func startInstance(ctx context.Context, t *testing.T, feats []string) *instance {
	t.Helper()
	return startInstanceTLS(ctx, t, feats, nil)
}

// startInstanceTLS is startInstance with TLS when m is not nil: the
// certificate files beside the password file, TLSArgs after ServerArgs.
func startInstanceTLS(ctx context.Context, t *testing.T, feats []string, m *certs.Material) *instance {
	t.Helper()
	return startInstanceOn(ctx, t, feats, m, nil)
}

// startInstanceOn is startInstanceTLS with tmpfs mounts (the data
// directory on one, as a runtime's storage = "tmpfs" places it).
func startInstanceOn(ctx context.Context, t *testing.T, feats []string, m *certs.Material, tmpfs []string) *instance {
	t.Helper()
	image := enginetest.Image(t, testImage, "images/build.sh mysql")
	c := state.Credentials{
		User:          "app_" + randomHex(4),
		Password:      state.Secret(`pw'"\;# ` + randomHex(8)), // quoting is exercised
		Database:      "db_" + randomHex(4),
		AdminUser:     AdminUser,
		AdminPassword: state.Secret("admin-" + randomHex(12)),
	}
	dir := t.TempDir()
	initDir, secretDir := filepath.Join(dir, "init"), filepath.Join(dir, "secret")
	for _, d := range []string{initDir, secretDir} {
		// The server runs as mysql (999); a runtime chowns to Account(),
		// the test opens the files to everyone instead.
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	writeFile(t, filepath.Join(initDir, InitScriptName), InitScript(c, feats))
	writeFile(t, filepath.Join(secretDir, PasswordFile), []byte(c.AdminPassword.Reveal()))
	args := ServerArgs()
	var tlsConf *tls.Config
	if m != nil {
		writeFile(t, filepath.Join(secretDir, "tls.crt"), m.CertPEM)
		writeFile(t, filepath.Join(secretDir, "tls.key"), m.KeyPEM)
		writeFile(t, filepath.Join(secretDir, "ca.crt"), m.CAPEM)
		args = append(args, TLSArgs("/run/sandboxer/tls.crt", "/run/sandboxer/tls.key", "/run/sandboxer/ca.crt")...)
		c.CA = string(m.CAPEM)
		var err error
		if tlsConf, err = c.ClientTLS("127.0.0.1"); err != nil {
			t.Fatal(err)
		}
	}
	ctr := enginetest.Start(ctx, t, enginetest.Spec{
		Image: image,
		Env: []string{
			RootPasswordFileEnv + "=/run/sandboxer/" + PasswordFile,
			"MARIADB_INITDB_SKIP_TZINFO=1",
		},
		Mounts: map[string]string{initDir: InitDir, secretDir: "/run/sandboxer"},
		Port:   Port,
		Args:   args,
		Tmpfs:  tmpfs,
	})
	c.Host, c.Port = "127.0.0.1", ctr.HostPort(ctx, Port)
	inst := &instance{ctr: ctr, creds: c}
	inst.ready = ctr.WaitFor(ctx, func(ctx context.Context) error { return Service{}.Ping(ctx, c, tlsConf) })
	return inst
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func (in *instance) open(t *testing.T, user string, password state.Secret, db string) *sql.DB {
	t.Helper()
	h, err := Open(in.creds.Host, in.creds.Port, user, password, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// mysqlErr returns the server's error number, or 0.
func mysqlErr(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}
