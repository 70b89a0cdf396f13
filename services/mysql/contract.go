package mysql

import (
	"context"
	"crypto/tls"
	"fmt"
	"path"

	"github.com/sandboxer/sandboxer/services/contract"
	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

// The rest of services.Service (services cannot be named here: it
// imports this package).

// SnapshotFormatName is what a snapshot file of the service holds:
// mariadb-dump's SQL of the handed-out database, without DEFINER
// clauses or CREATE DATABASE (Data.Dump).
const SnapshotFormatName = "mariadb-dump-sql"

// Start is the official image's contract: the root password as a file
// (MYSQL_ROOT_PASSWORD_FILE), root for the socket and localhost only
// (MARIADB_ROOT_HOST; the admin the runtime names logs in over TCP,
// InitScript), the time zone tables skipped (about a second of a cold
// start), the init script among the image's init scripts, the data
// directory the runtime's data root (the entrypoint owns it to mysql
// and initialises it), an empty read-only directory for
// secure_file_priv (the official images lack it, and the server refuses
// to start without it), ServerArgs and, with TLS, TLSArgs. The options
// are the command: the entrypoint runs mariadbd with them.
func (Service) Start(in contract.StartInput, at contract.Placement) (contract.Start, error) {
	if at.DataRoot == "" {
		return contract.Start{}, fmt.Errorf("mysql keeps its data under the runtime's data root, and the runtime gave none")
	}
	c := in.Creds
	var feats []string
	for _, f := range in.Features {
		if _, ok := pluginOf(f); ok {
			feats = append(feats, f)
		}
	}
	args := append([]string{"--datadir=" + at.DataRoot}, ServerArgs()...)
	if at.TLSCert != "" {
		args = append(args, TLSArgs(at.TLSCert, at.TLSKey, at.TLSCA)...)
	}
	return contract.Start{
		Files: map[string][]byte{
			PasswordFile:   []byte(c.AdminPassword.Reveal()),
			InitScriptName: InitScript(c, feats),
		},
		Mounts: map[string]string{path.Join(InitDir, InitScriptName): InitScriptName},
		Env: []string{
			RootPasswordFileEnv + "=" + path.Join(at.SecretDir, PasswordFile),
			"MARIADB_ROOT_HOST=localhost",
			"MARIADB_INITDB_SKIP_TZINFO=1",
		},
		Args: args,
		// The stored forms of the passwords are in the init script: a
		// server log that echoes a failing statement must not show them.
		Derived: []state.Secret{
			state.Secret(NativePasswordHash(c.Password.Reveal())),
			state.Secret(NativePasswordHash(c.AdminPassword.Reveal())),
		},
		EmptyDirs: []string{SecureFilePrivDir},
		NeedsData: true,
	}, nil
}

// Ready waits for the app user's login and SELECT 1 in its database
// (the entrypoint's init server listens on the socket only, so an answer
// over TCP comes from the real server, after the init script ran), then
// checks the plugins as that user (Verify).
func (Service) Ready(ctx context.Context, c state.Credentials, tlsConf *tls.Config, poll contract.Poll, check contract.Check) (map[string]string, error) {
	if err := poll(ctx, func(ctx context.Context) error {
		return Ping(ctx, c.Host, c.Port, c.User, c.Password, c.Database, tlsConf)
	}); err != nil {
		return nil, err
	}
	db, err := Open(c.Host, c.Port, c.User, c.Password, c.Database, tlsConf)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return Verify(ctx, db, check.ImageRef, check.Features)
}

// Prober logs in afresh on every probe.
func (Service) Prober() contract.Prober { return prober{} }

type prober struct{}

func (prober) Ping(ctx context.Context, c state.Credentials, tlsConf *tls.Config) error {
	return Service{}.Ping(ctx, c, tlsConf)
}
func (prober) Forget(state.Credentials) {}
func (prober) Close()                   {}

// NamesDatabase: the app user owns the request's database.
func (Service) NamesDatabase() bool { return true }

// Rotate gives the app user the password pw (see the function Rotate).
func (Service) Rotate(ctx context.Context, c state.Credentials, pw state.Secret) error {
	return Rotate(ctx, c, pw)
}

// Data is the instance's data mover: mariadb-dump and the client
// through in.Run (data.go).
func (Service) Data(in contract.Instance) contract.DataMover {
	return Data{Run: in.Run, Creds: in.Creds}
}

// SnapshotFormat is mariadb-dump's SQL.
func (Service) SnapshotFormat() snapshot.FileFormat {
	return snapshot.FileFormat{Name: SnapshotFormatName, Ext: ".sql"}
}

// Keep does nothing: a load replays the SQL (MariaDB has no template
// database to keep a copy in).
func (Data) Keep(context.Context, snapshot.Data) error { return nil }

// Load replaces the handed-out database with the snapshot's (LoadFile).
func (d Data) Load(ctx context.Context, snap snapshot.Data) error {
	return d.LoadFile(ctx, snap.Path)
}
