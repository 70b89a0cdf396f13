package valkey

import (
	"context"
	"crypto/tls"
	"path"

	"github.com/sandboxer/sandboxer/services/contract"
	"github.com/sandboxer/sandboxer/services/redis"
	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

// The rest of services.Service (services cannot be named here: it
// imports this package). Where Valkey behaves as Redis, services/redis
// does the work.

// Start is valkey-server (the image's entrypoint runs it as valkey) with
// ServerArgs, the requested modules the image does not load by itself
// and, with TLS, the TLS port in place of the plain one.
func (Service) Start(in contract.StartInput, at contract.Placement) (contract.Start, error) {
	args := append([]string{"valkey-server"}, ServerArgs(path.Join(at.SecretDir, ACLFileName))...)
	args = append(args, LoadModuleArgs(in.Features, in.Modules, in.SelfLoaded)...)
	if at.TLSCert != "" {
		args = append(args, TLSArgs(at.TLSCert, at.TLSKey, at.TLSCA)...)
	}
	return contract.Start{Files: map[string][]byte{ACLFileName: ACLFile(in.Creds)}, Args: args}, nil
}

// Ready waits for the app user's AUTH and PING, then checks the modules
// by Valkey's names and denies the user their administrative commands
// (redis.VerifyModules).
func (Service) Ready(ctx context.Context, c state.Credentials, tlsConf *tls.Config, poll contract.Poll, check contract.Check) (map[string]string, error) {
	if err := poll(ctx, func(ctx context.Context) error {
		return redis.Ping(ctx, c.Host, c.Port, c.User, c.Password, tlsConf)
	}); err != nil {
		return nil, err
	}
	return redis.VerifyModules(ctx, c, tlsConf, Name, ModuleNames, check.ImageRef, check.Runtime, check.Features, check.Allowed, check.Seen)
}

// Prober is Redis's: a fresh AUTH per probe is cheap.
func (Service) Prober() contract.Prober { return redis.Service{}.Prober() }

// NamesDatabase: Valkey's numbered databases are not the request's.
func (Service) NamesDatabase() bool { return false }

// Rotate is ACL SETUSER resetpass with pw's SHA-256, then CLIENT KILL
// USER, as the admin (redis.Rotate: Valkey has the same commands).
func (Service) Rotate(ctx context.Context, c state.Credentials, pw state.Secret) error {
	return redis.Rotate(ctx, c, pw)
}

// Data is DUMP/RESTORE over the admin connection (redis.Data).
func (Service) Data(in contract.Instance) contract.DataMover { return redis.Data{Creds: in.Creds} }

// SnapshotFormat is Redis's key dump: Valkey 8 reads Redis 7's DUMP
// payloads.
func (Service) SnapshotFormat() snapshot.FileFormat { return redis.Service{}.SnapshotFormat() }

// InspectStart is the throwaway server that finds an image's modules
// (contract.ModuleLoader).
func (Service) InspectStart(c state.Credentials, secretDir string) contract.Start {
	return redis.InspectStart("valkey-server", ACLFileName, c, secretDir)
}

// FeatureVersion is the version of feature's module among loaded, by
// the names Valkey's modules report.
func (Service) FeatureVersion(loaded map[string]string, feature string) (string, bool) {
	for _, n := range ModuleNames(feature) {
		if v, ok := loaded[n]; ok {
			return v, true
		}
	}
	return "", false
}

// ModulesHint says how to give a valkey image a module.
func (Service) ModulesHint(runtime string) string {
	return redis.ModulesHint(runtime, Name, "valkey/valkey-bundle:8")
}

// Forks are Redis's (a BGSAVE's RDB file; redis.ForkCapture).

func (Service) ForkSize(ctx context.Context, in contract.Instance) (int64, error) {
	return redis.ForkSize(ctx, in.Creds)
}

func (Service) ForkCapture(ctx context.Context, in contract.Instance, _ string, during func(context.Context) error) (contract.ForkCopy, error) {
	return redis.ForkCapture(ctx, in.Creds, during)
}

func (Service) ForkClean(ctx context.Context, in contract.Instance, _ string, c contract.ForkCopy) error {
	return redis.ForkClean(ctx, in.Run, Service{}.Account(), c)
}

func (Service) ForkArgs(dir string, c contract.ForkCopy) []string { return redis.ForkArgs(dir, c) }

func (Service) ForkConnect(ctx context.Context, in contract.Instance) (contract.Forker, func(), error) {
	return redis.ForkConnect(ctx, in.Creds, Service{}.Account())
}
