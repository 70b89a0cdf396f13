package sandboxer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/databases"
	"github.com/sandboxer/sandboxer/ondemand"
	"github.com/sandboxer/sandboxer/services"
	"github.com/sandboxer/sandboxer/state"
)

// DatabaseHostKey is the key of the kept on-demand instance that hosts
// the per-test databases of a block: every test (in any process) that
// asks for a database of sandbox.NAME shares sandbox.NAME["sbx-databases"].
// A tenant's databases have a host of their own, keyed by the one key
// rule (sandbox.NAME["acme.sbx-databases"]), owned by the tenant and
// counted in its instances: no tenant's database shares a server with
// another's, and a drop by name reaches only the caller's host.
const DatabaseHostKey = "sbx-databases"

// databaseHost is the address of the host instance of block a for the
// caller of ctx.
func databaseHost(ctx context.Context, a config.Address) string {
	return config.Address{Name: a.Name, Key: ondemand.TenantKey(TenantOf(ctx), DatabaseHostKey), HasKey: true}.String()
}

// DatabaseOptions shape Database.
type DatabaseOptions struct {
	// Migration makes the template's schema once per content
	// (databases.SQL(…) or a Go function with its own hash). SQL is the
	// same as Migration: databases.SQL(SQL...), for callers that cannot
	// pass a function (the API). Neither: an empty schema.
	Migration databases.Migration
	SQL       []string
	// CreateDB lets the database's role create databases.
	CreateDB bool
	// TTL is the database's lease (default 1h): reap drops it after that
	// even if its test still runs.
	TTL time.Duration
	// Prefix starts the names in Env ("" for SANDBOXER_).
	Prefix string
	// Remote says the database is for a process elsewhere (the HTTP API's
	// caller): only its TTL ends it, not this process's exit.
	Remote bool
}

// Database hands out a fresh database of the block's database service
// (services.DatabaseHostOf: PostgreSQL, MySQL), made from the migration's
// template inside the block's kept host instance (made on first use,
// reused after), owned by a user of its own that no other test's user
// can reach. The result carries it as that service: Env's
// SANDBOXER_POSTGRES_URL (or SANDBOXER_MYSQL_URL) and friends, URL(name).
// Drop it with DropDatabase (sandboxertest.Database does at t.Cleanup).
func (s *Sandboxer) Database(ctx context.Context, address string, o DatabaseOptions) (*Sandbox, error) {
	srv, host, err := s.databaseServer(ctx, address)
	if err != nil {
		return nil, err
	}
	m := services.TestMigration{Hash: o.Migration.Hash, SQL: o.Migration.SQL}
	if o.Migration.Run != nil {
		m.Run = o.Migration.Run
	} else {
		m = services.TestMigration{Hash: databases.SQL(o.SQL...).Hash, SQL: o.SQL}
	}
	unlock, err := s.databaseQuota(ctx)
	if err != nil {
		return nil, err
	}
	// Under a tenant's databases quota the next hand-out counts this one
	// (Held): its lease must be the caller's before the lock goes.
	t := TenantOf(ctx)
	exact := t != nil && t.Quota.Databases > 0
	d, err := srv.Take(ctx, m, services.DatabaseOptions{CreateDB: o.CreateDB, TTL: o.TTL, Remote: o.Remote, ExactLease: exact})
	unlock()
	if err != nil {
		return nil, &Error{Code: CodeInvalid, Message: err.Error(), Err: err}
	}
	svc, _, _ := services.DatabaseHostOf(host.Services)
	hc := host.Credentials[svc]
	c := state.Credentials{Host: d.Host, Port: d.Port, User: d.User, Password: d.Password, Database: d.Name,
		CA: hc.CA, CAFile: hc.CAFile}
	rec := &state.Record{Address: host.Address, Services: []string{svc}, Generation: host.Generation,
		Credentials: map[string]state.Credentials{svc: c}}
	out := &Sandbox{Address: host.Address, Generation: host.Generation, Services: []string{svc},
		Features: map[string][]string{svc: host.Features[svc]}, Env: rec.EnvMap(o.Prefix)}
	return out, nil
}

// DropDatabase drops a database Database handed out (name is its
// SANDBOXER_POSTGRES_DB or SANDBOXER_MYSQL_DB), with its user; one
// already gone is fine.
func (s *Sandboxer) DropDatabase(ctx context.Context, address, name string) error {
	if name == "" {
		return &Error{Code: CodeInvalid, Message: "name the database to drop (its SANDBOXER_POSTGRES_DB or SANDBOXER_MYSQL_DB)"}
	}
	a, err := config.ParseAddress(address)
	if err != nil || a.HasKey {
		return &Error{Code: CodeInvalid, Message: fmt.Sprintf("%q: give a sandbox block (sandbox.NAME), not an instance", address)}
	}
	// Never provisions: without a host there is nothing to drop.
	rec, err := s.store.Get(ctx, databaseHost(ctx, a))
	if err != nil {
		return classify(err)
	}
	if rec == nil || !ownedBy(ctx, rec) {
		return nil
	}
	srv, err := s.connectDatabases(ctx, rec)
	if err != nil {
		return err
	}
	return classify(srv.Drop(ctx, name))
}

// reapDatabases drops the databases of every host instance in state whose
// lease passed or whose test process on this machine is gone (part of
// Reap); it provisions nothing. The answer maps each host's address to
// the databases dropped there.
func (s *Sandboxer) reapDatabases(ctx context.Context) (map[string][]string, error) {
	snap, err := s.store.Inspect(ctx) // a damaged record is reap's to report, not a reason to stop
	if err != nil {
		return nil, classify(err)
	}
	out := map[string][]string{}
	var errs []error
	for addr, rec := range snap.Records {
		a, err := config.ParseAddress(addr)
		if err != nil || !a.HasKey || (a.Key != DatabaseHostKey && !strings.HasSuffix(a.Key, "."+DatabaseHostKey)) {
			continue
		}
		srv, err := s.connectDatabases(ctx, rec)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		dropped, err := srv.Reap(ctx)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", addr, err))
		}
		if len(dropped) > 0 {
			out[addr] = dropped
		}
	}
	return out, classify(errors.Join(errs...))
}

// databaseHosts are the open admin connections to host instances, by
// instance address and generation: a replaced host is a new server.
type databaseHosts struct {
	mu      sync.Mutex
	servers map[string]services.TestDatabases
}

func (h *databaseHosts) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, s := range h.servers {
		s.Close()
	}
	h.servers = nil
}

// databaseServer requests the block's host instance (reused when it
// covers the block, as any request) and connects to it as its admin.
func (s *Sandboxer) databaseServer(ctx context.Context, address string) (services.TestDatabases, *state.Record, error) {
	a, err := config.ParseAddress(address)
	if err != nil || a.HasKey {
		return nil, nil, &Error{Code: CodeInvalid, Message: fmt.Sprintf("%q: give a sandbox block (sandbox.NAME), not an instance", address)}
	}
	// Before anything is provisioned: the block's instances must run a
	// service that hosts databases.
	if in, ok := s.cfg.Instance(a); ok {
		if _, _, ok := services.DatabaseHostOf(in.Services); !ok {
			return nil, nil, &Error{Code: CodeNotAllowed, Message: fmt.Sprintf("%s runs no service that hosts databases per test (%s)", a, strings.Join(databaseServices(), ", "))}
		}
	}
	// A host this process reached before, of the generation state still
	// records: no broker round (a lock, a probe) per hand-out. A host
	// replaced since (another generation, or gone) goes through Request.
	hostAddr := databaseHost(ctx, a)
	if rec, err := s.store.Get(ctx, hostAddr); err == nil && rec != nil && ownedBy(ctx, rec) {
		s.dbs.mu.Lock()
		srv, ok := s.dbs.servers[fmt.Sprintf("%s#%d", rec.Address, rec.Generation)]
		s.dbs.mu.Unlock()
		if ok {
			return srv, rec, nil
		}
	}
	// This process's first hand-out in the host (a test binary, a
	// sandboxertest.Database opening the library per test): a host the
	// cache rule covers as it stands is used without the broker's lock
	// and probe; connecting to its server as the admin is the probe, and
	// a host that does not answer goes through Request.
	req := ondemand.Request{Address: a.String(), Key: DatabaseHostKey, TTL: databaseHostTTL(ctx).String()}
	if rec, err := s.broker().Covered(ctx, req); err == nil && rec != nil {
		if srv, err := s.connectDatabases(ctx, rec); err == nil {
			return srv, rec, nil
		}
	}
	sbx, err := s.Request(ctx, a.String(), RequestOptions{Key: req.Key, TTL: req.TTL})
	if err != nil {
		return nil, nil, err
	}
	rec, err := s.store.Get(ctx, sbx.Address)
	if err != nil || rec == nil {
		return nil, nil, classify(fmt.Errorf("read the database host %s: %w", sbx.Address, err))
	}
	srv, err := s.connectDatabases(ctx, rec)
	return srv, rec, err
}

// connectDatabases connects to a host instance as its admin, once per
// instance generation.
func (s *Sandboxer) connectDatabases(ctx context.Context, rec *state.Record) (services.TestDatabases, error) {
	svc, dh, ok := services.DatabaseHostOf(rec.Services)
	c := rec.Credentials[svc]
	if !ok || c.AdminUser == "" {
		return nil, &Error{Code: CodeNotAllowed, Message: fmt.Sprintf("%s runs no service that hosts databases per test (%s)", rec.Address, strings.Join(databaseServices(), ", "))}
	}
	key := fmt.Sprintf("%s#%d", rec.Address, rec.Generation)
	s.dbs.mu.Lock()
	if srv, ok := s.dbs.servers[key]; ok {
		s.dbs.mu.Unlock()
		return srv, nil
	}
	srv, err := dh.OpenDatabases(ctx, c)
	if err != nil {
		s.dbs.mu.Unlock()
		return nil, classify(err)
	}
	if s.dbs.servers == nil {
		s.dbs.servers = map[string]services.TestDatabases{}
	}
	s.dbs.servers[key] = srv
	// A host replaced (a superset, a dead one re-provisioned): the old
	// generation's server hands out nothing more and stops refilling
	// its pool; its databases went with its container.
	var old []services.TestDatabases
	for k, o := range s.dbs.servers {
		if k != key && k[:strings.LastIndex(k, "#")] == rec.Address {
			old = append(old, o)
			delete(s.dbs.servers, k)
		}
	}
	s.dbs.mu.Unlock()
	for _, o := range old {
		o.Close()
	}
	return srv, nil
}

// databaseServices names the catalogue's services that host databases
// per test, for a refusal to list.
func databaseServices() []string {
	var out []string
	for _, svc := range services.All() {
		if _, ok := svc.(services.DatabaseHost); ok {
			out = append(out, svc.Name())
		}
	}
	return out
}

// databaseHostTTL is the lifetime a host instance is requested with: 30
// days, or a tenant's max_ttl when shorter (the host then ends by it,
// and the next Database makes a new one).
func databaseHostTTL(ctx context.Context) time.Duration {
	ttl := 30 * 24 * time.Hour
	if t := TenantOf(ctx); t != nil && t.Quota.MaxTTL > 0 && t.Quota.MaxTTL < ttl {
		ttl = t.Quota.MaxTTL
	}
	return ttl
}

// ownedBy reports whether the caller of ctx may use rec: the operator
// every record, a tenant its own.
func ownedBy(ctx context.Context, rec *state.Record) bool {
	t := TenantOf(ctx)
	return t == nil || rec.Owner == t.Name
}

// databaseQuotaLock names the lock under which a tenant's databases are
// counted and one handed out: not a sandbox address, so no command
// contends with it.
const databaseQuotaLock = "(tenant databases) "

// databaseQuota holds, for a tenant with a databases quota, its
// databases lock (across every process sharing the state) and checks the
// databases it holds in all its hosts are under the quota; the returned
// func drops the lock once the hand-out is done. The operator and
// tenants without the quota get a no-op.
func (s *Sandboxer) databaseQuota(ctx context.Context) (func(), error) {
	t := TenantOf(ctx)
	if t == nil || t.Quota.Databases <= 0 {
		return func() {}, nil
	}
	timeout := s.opts.LockTimeout
	if timeout <= 0 {
		timeout = ondemand.DefaultLockTimeout
	}
	unlock, err := s.store.LockInstance(ctx, databaseQuotaLock+t.Name, "database", timeout)
	if err != nil {
		return nil, classify(err)
	}
	release := func() { _ = unlock() }
	held, err := s.tenantDatabases(ctx, t)
	if err != nil {
		release()
		return nil, err
	}
	if held >= t.Quota.Databases {
		release()
		return nil, &Error{Code: CodeQuotaExceeded,
			Message: fmt.Sprintf("quota databases is %d; %d live: drop one (or let its ttl pass) first", t.Quota.Databases, held)}
	}
	return release, nil
}

// tenantDatabases counts the live databases handed out in every host
// instance the tenant owns.
func (s *Sandboxer) tenantDatabases(ctx context.Context, t *Tenant) (int, error) {
	snap, err := s.store.Inspect(ctx)
	if err != nil {
		return 0, classify(err)
	}
	held := 0
	for addr, rec := range snap.Records {
		a, err := config.ParseAddress(addr)
		if err != nil || rec.Owner != t.Name || a.Key != ondemand.TenantKey(t, DatabaseHostKey) {
			continue
		}
		srv, err := s.connectDatabases(ctx, rec)
		if err != nil {
			return 0, err
		}
		n, err := srv.Held(ctx)
		if err != nil {
			return 0, classify(err)
		}
		held += n
	}
	return held, nil
}
