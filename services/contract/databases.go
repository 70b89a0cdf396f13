package contract

import (
	"context"
	"time"

	"github.com/sandboxer/sandboxer/state"
)

// DatabaseHost is what a service that hands out a database per test adds
// (PostgreSQL, MySQL): a maker of test databases in one running instance
// of it, connected as the instance's admin (admin's AdminUser and
// AdminPassword, at its Host and Port). The library's Database asks the
// block's service for it instead of branching on the service's name.
type DatabaseHost interface {
	OpenDatabases(ctx context.Context, admin state.Credentials) (TestDatabases, error)
}

// TestDatabases hands out, drops and reaps the test databases of one
// server. Every database is made from the migration's template (made
// once per migration content, across processes), owned by a user of
// its own that reaches no other database, and leased: Reap drops those
// whose lease passed or whose test process on this machine is gone.
// Errors quote no password.
type TestDatabases interface {
	Take(ctx context.Context, m Migration, o DatabaseOptions) (TestDatabase, error)
	// Drop drops a database Take handed out, with its user; one already
	// gone (or never made here) counts as dropped.
	Drop(ctx context.Context, name string) error
	Reap(ctx context.Context) (dropped []string, err error)
	// Held is how many handed-out databases are within their lease.
	Held(ctx context.Context) (int, error)
	Close()
}

// Migration makes a template's schema. Hash names its content (one hash,
// one template). SQL is its texts, run in order; Run, when not nil, is a
// service's own migration function (PostgreSQL's takes a
// *pgx.Conn): a service that has none refuses a Migration without SQL.
type Migration struct {
	Hash string
	SQL  []string
	Run  any
}

// DatabaseOptions shape one test database.
type DatabaseOptions struct {
	// CreateDB lets the database's user create databases of its own
	// (a framework's shadow or test database), dropped with it.
	CreateDB bool
	// TTL is the lease (default one hour).
	TTL time.Duration
	// Remote: asked for by a process elsewhere (the HTTP API's caller);
	// only the TTL ends it.
	Remote bool
	// ExactLease: the lease is the caller's when Take returns (a quota
	// counts it at once).
	ExactLease bool
}

// TestDatabase is one handed-out database and its user.
type TestDatabase struct {
	Name, User string
	Password   state.Secret
	Host       string
	Port       int
}
