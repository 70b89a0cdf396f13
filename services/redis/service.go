package redis

import (
	"context"
	"crypto/tls"
	"io"

	"github.com/sandboxer/sandboxer/services/contract"
	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

// Name is the service's name.
const Name = "redis"

// Port is the port the server listens on.
const Port = 6379

// Service is Redis for the services.Service contract.
type Service struct{}

func (Service) Name() string    { return Name }
func (Service) Port() int       { return Port }
func (Service) Account() string { return "redis" }
func (Service) StartRank() int  { return 1 }

// NamesDatabase: Redis's numbered databases are not the request's.
func (Service) NamesDatabase() bool { return false }

// Rotate gives the app user the secret pw (see the function Rotate).
func (Service) Rotate(ctx context.Context, c state.Credentials, pw state.Secret) error {
	return Rotate(ctx, c, pw)
}

// Data is the instance's data mover: DUMP and RESTORE over the admin
// connection (data.go); it needs no exec.
func (Service) Data(in contract.Instance) contract.DataMover { return Data{Creds: in.Creds} }

// SnapshotFormat is JSON lines of DUMP payloads.
func (Service) SnapshotFormat() snapshot.FileFormat {
	return snapshot.FileFormat{Name: snapshot.FormatRedisDump, Ext: ".jsonl"}
}

// Data moves one instance's data with its admin credentials.
type Data struct{ Creds state.Credentials }

// Dump writes every key (Dump).
func (d Data) Dump(ctx context.Context, w io.Writer) error { return Dump(ctx, d.Creds, w) }

// Keep does nothing: Redis loads fast without a prepared copy.
func (Data) Keep(context.Context, snapshot.Data) error { return nil }

// Load replaces every key with snap's (Load).
func (d Data) Load(ctx context.Context, snap snapshot.Data) error {
	return Load(ctx, d.Creds, snap.Path)
}

// Ready waits for the app user's AUTH and PING, then checks the modules
// (Verify).
func (Service) Ready(ctx context.Context, c state.Credentials, tlsConf *tls.Config, poll contract.Poll, check contract.Check) (map[string]string, error) {
	if err := poll(ctx, func(ctx context.Context) error {
		return Ping(ctx, c.Host, c.Port, c.User, c.Password, tlsConf)
	}); err != nil {
		return nil, err
	}
	return Verify(ctx, c, tlsConf, check.ImageRef, check.Runtime, check.Features, check.Allowed, check.Seen)
}

// Prober logs in afresh on every probe: a Redis AUTH is cheap.
func (Service) Prober() contract.Prober { return prober{} }

type prober struct{}

func (prober) Ping(ctx context.Context, c state.Credentials, tlsConf *tls.Config) error {
	return Service{}.Ping(ctx, c, tlsConf)
}
func (prober) Forget(state.Credentials) {}
func (prober) Close()                   {}

// Ping is AUTH as c's user, then PING.
func (Service) Ping(ctx context.Context, c state.Credentials, tlsConf *tls.Config) error {
	return Ping(ctx, c.Host, c.Port, c.User, c.Password, tlsConf)
}
