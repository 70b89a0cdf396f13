package valkey

import (
	"context"
	"crypto/tls"
	"io"

	"github.com/sandboxer/sandboxer/services/redis"
	"github.com/sandboxer/sandboxer/state"
)

// Name is the service's name.
const Name = "valkey"

// Port is the port the server listens on.
const Port = 6379

// ACLFileName is the ACL file inside the runtime's secret directory.
const ACLFileName = "valkey-users.acl"

// Service is Valkey for the services.Service contract.
type Service struct{}

func (Service) Name() string    { return Name }
func (Service) Port() int       { return Port }
func (Service) Account() string { return "valkey" }
func (Service) StartRank() int  { return 1 }

// Ping is AUTH as c's user, then PING (go-redis speaks to Valkey as to
// Redis).
func (Service) Ping(ctx context.Context, c state.Credentials, tlsConf *tls.Config) error {
	return redis.Ping(ctx, c.Host, c.Port, c.User, c.Password, tlsConf)
}

// ACLFile renders the users as services/redis does: the default user off
// with no password, sandboxer's admin with every right, the app user with
// AppACL; passwords as SHA-256 hashes.
func ACLFile(c state.Credentials) []byte { return redis.ACLFile(c) }

// AppACL is the handed-out user's rule set: everything but the @admin
// and @dangerous categories (CONFIG, MODULE, DEBUG, ACL, SHUTDOWN,
// MONITOR, REPLICAOF, CLIENT KILL, …), with the few @dangerous commands
// test suites use on their own data added back. Valkey 8 keeps Redis 7's
// categories.
const AppACL = redis.AppACL

// ServerArgs are the arguments a runtime passes to the image's command
// (valkey-server): the ACL file at aclPath, no persistence (nothing
// outlives the container; no fork for snapshots), and the module and
// debug commands off for everyone, as Valkey's defaults have them, said
// explicitly so an image whose config turns them on does not.
func ServerArgs(aclPath string) []string {
	return []string{
		"--aclfile", aclPath,
		"--save", "",
		"--appendonly", "no",
		"--enable-module-command", "no",
		"--enable-debug-command", "no",
		"--enable-protected-configs", "no",
	}
}

// TLSArgs replace the plain port by a TLS one on the same number, as for
// Redis (same option names).
func TLSArgs(certFile, keyFile, caFile string) []string {
	return redis.TLSArgs(certFile, keyFile, caFile)
}

// Dump writes every key of every database as JSON lines over the admin
// connection (DUMP's format, which Valkey shares with Redis 7).
func Dump(ctx context.Context, c state.Credentials, w io.Writer) error {
	return redis.Dump(ctx, c, w)
}

// Load replaces every database's keys with the dump's, in one
// MULTI/EXEC.
func Load(ctx context.Context, c state.Credentials, path string) error {
	return redis.Load(ctx, c, path)
}
