package postgres

import (
	"context"
	"crypto/tls"

	"github.com/jackc/pgx/v5"

	"github.com/sandboxer/sandboxer/services/contract"
	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

// Name is the service's name.
const Name = "postgres"

// Port is the port the server listens on.
const Port = 5432

// PasswordFile is the file, in the runtime's secret directory, that holds
// the admin password for the official image's POSTGRES_PASSWORD_FILE.
const PasswordFile = "postgres-password"

// DefaultPGDATA is the data directory of images that do not set PGDATA.
const DefaultPGDATA = "/var/lib/postgresql/data"

// Service is PostgreSQL for the services.Service contract.
type Service struct{}

func (Service) Name() string    { return Name }
func (Service) Port() int       { return Port }
func (Service) Account() string { return "postgres" }
func (Service) StartRank() int  { return 0 } // initdb is the longest path to ready

// NamesDatabase: the app role owns the request's database.
func (Service) NamesDatabase() bool { return true }

// Rotate gives the app role the password pw (see the function Rotate).
func (Service) Rotate(ctx context.Context, c state.Credentials, pw state.Secret) error {
	return Rotate(ctx, c, pw)
}

// Data is the instance's data mover: pg_dump and pg_restore through
// in.Run (data.go).
func (Service) Data(in contract.Instance) contract.DataMover {
	return Data{Run: in.Run, Creds: in.Creds, Features: in.Features, Allowed: in.Allowed}
}

// SnapshotFormat is pg_dump's custom format.
func (Service) SnapshotFormat() snapshot.FileFormat {
	return snapshot.FileFormat{Name: snapshot.FormatPGCustom, Ext: ".pgdump"}
}

// Ready waits for the app role's login and SELECT 1 (the image's init
// server listens on the socket only, so an answer over TCP comes from the
// real server, after the init script ran), then checks the extensions on
// that connection (Verify).
func (Service) Ready(ctx context.Context, c state.Credentials, tlsConf *tls.Config, poll contract.Poll, check contract.Check) (map[string]string, error) {
	var conn *pgx.Conn
	if err := poll(ctx, func(ctx context.Context) error {
		var err error
		conn, err = Ready(ctx, c, tlsConf)
		return err
	}); err != nil {
		return nil, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	return Verify(ctx, conn, check.ImageRef, c.Database, check.Features, check.Allowed)
}

// Prober keeps a logged-in connection per instance (Warm).
func (Service) Prober() contract.Prober { return &Warm{} }

// Ping logs in as c's role to its database and runs SELECT 1.
func (Service) Ping(ctx context.Context, c state.Credentials, tlsConf *tls.Config) error {
	return Ping(ctx, c.Host, c.Port, c.User, c.Password, c.Database, tlsConf)
}
