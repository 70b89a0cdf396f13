package databases

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sandboxer/sandboxer/internal/scram"
)

// The pool: databases cloned ahead of demand, each owned by a role of its
// own that cannot log in (NOLOGIN, no password) until a test takes it.
// They are rows of the lease table with pooled = true, so every process
// that reaches the host (one `go test` process per package) takes from
// the same pool: Take claims a row with SELECT … FOR UPDATE SKIP LOCKED
// and binds a fresh SCRAM verifier to its role, all in one function call
// (one round trip). A taken database is never put back: Drop removes it
// with its role, as before.

// PoolConfig bounds the pool of one server.
type PoolConfig struct {
	// Min is how many databases per template are kept ready at first
	// (default 4); a Take that finds none ready doubles the template's
	// target, up to Max (default 32).
	Min, Max int
	// Parallel is how many clones are made at once in the background
	// (default 2).
	Parallel int
	// Bound is how many databases (ready and handed out, from every
	// process) the host may hold (default 2,000); BoundWait is how long a
	// Take waits for one to be dropped when it is reached (default 30s).
	Bound     int
	BoundWait time.Duration
}

func (c PoolConfig) withDefaults() PoolConfig {
	if c.Min <= 0 {
		c.Min = 4
	}
	if c.Max < c.Min {
		c.Max = max(32, c.Min)
	}
	if c.Parallel <= 0 {
		c.Parallel = 2
	}
	if c.Bound <= 0 {
		c.Bound = 2000
	}
	if c.BoundWait <= 0 {
		c.BoundWait = 30 * time.Second
	}
	return c
}

// BoundError is a Take that waited BoundWait with the host at its bound.
type BoundError struct {
	Bound int
	Wait  time.Duration
}

func (e *BoundError) Error() string {
	return fmt.Sprintf("databases: the host holds its bound of %d databases (PoolConfig.Bound); none was dropped within %s", e.Bound, e.Wait)
}

// cloneTimeout bounds one background clone (and so how long Close
// waits for the clones under way).
const cloneTimeout = 30 * time.Second

// pooledLife is how long a ready database stays takeable; Reap drops it
// after that (a process that made it may be long gone).
const pooledLife = time.Hour

// takeFunction claims a ready database of a template and lets its role
// log in with the verifier given, in one statement. The role name is the
// database name (made by this package: [a-z0-9_]).
const takeFunction = `CREATE OR REPLACE FUNCTION sbx_take_v1(tpl text, verifier text, createdb boolean, ttl interval, h text, p integer)
RETURNS text LANGUAGE plpgsql AS $$
DECLARE n text;
BEGIN
	SELECT name INTO n FROM sbx_databases
		WHERE template = tpl AND pooled AND expires_at > now() + interval '5 minutes'
		ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED;
	IF n IS NULL THEN RETURN NULL; END IF;
	UPDATE sbx_databases SET pooled = false, expires_at = now() + ttl, host = h, pid = p WHERE name = n;
	EXECUTE format('ALTER ROLE %I LOGIN PASSWORD %L %s', n, verifier, CASE WHEN createdb THEN 'CREATEDB' ELSE 'NOCREATEDB' END);
	RETURN n;
END $$`

// pools is a server's background filling.
type pools struct {
	cfg    PoolConfig
	fill   *pgxpool.Pool // the clones' own connections: a Take never waits behind one
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	slots  chan struct{} // Parallel

	mu        sync.Mutex
	templates map[string]*templatePool // by template name

	secrets chan secret // password and verifier made ahead (PBKDF2 costs milliseconds)
}

type templatePool struct {
	target  int
	filling int
}

type secret struct{ password, verifier string }

func newPools(cfg PoolConfig, fill *pgxpool.Pool) *pools {
	ctx, cancel := context.WithCancel(context.Background())
	p := &pools{cfg: cfg, fill: fill, ctx: ctx, cancel: cancel, slots: make(chan struct{}, cfg.Parallel),
		templates: map[string]*templatePool{}, secrets: make(chan secret, 64)}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			pw := randomHex(16)
			v, err := scram.Verifier(pw)
			if err != nil {
				return
			}
			select {
			case p.secrets <- secret{pw, v}:
			case <-ctx.Done():
				return
			}
		}
	}()
	return p
}

// stop ends the background work (clones under way are finished); close
// then closes its connections.
func (p *pools) stop() {
	p.cancel()
	p.wg.Wait()
}

func (p *pools) close() {
	p.stop()
	p.fill.Close()
}

func (p *pools) secret() (secret, error) {
	select {
	case s := <-p.secrets:
		return s, nil
	default:
		pw := randomHex(16)
		v, err := scram.Verifier(pw)
		return secret{pw, v}, err
	}
}

// Take hands out a database of the migration's template: a ready one
// from the pool when there is one (one round trip), else a clone made
// now; either way it asks the background to refill. Its role's
// credentials are made here and were never handed out before.
func (s *Server) Take(ctx context.Context, m Migration, o Options) (*Database, error) {
	tpl, o, err := s.prepare(ctx, m, o)
	if err != nil {
		return nil, err
	}
	if d := s.fromPrefetch(tpl, o); d != nil {
		if !o.ExactLease {
			return d, nil
		}
		if err := s.leaseTo(ctx, d.Name, o); err != nil {
			s.giveBackLater(d.Name)
			return nil, fmt.Errorf("databases: lease %s: %w", d.Name, err)
		}
		return d, nil
	}
	sec, err := s.pools.secret()
	if err != nil {
		return nil, fmt.Errorf("databases: %w", err)
	}
	host, pid := leaseOwner(o)
	var name *string
	err = s.pool.QueryRow(ctx, `SELECT sbx_take_v1($1, $2, $3, $4::interval, $5, $6)`,
		tpl, sec.verifier, o.CreateDB, fmt.Sprintf("%d seconds", int(o.TTL.Seconds())), host, pid).Scan(&name)
	if err != nil {
		return nil, fmt.Errorf("databases: take from the pool of %s: %w", tpl, err)
	}
	s.refill(tpl, name == nil)
	if name != nil {
		return &Database{Name: *name, Role: *name, Password: sec.password, Host: s.host, Port: s.port, Template: tpl}, nil
	}
	// None ready: clone one now, within the host's bound.
	if err := s.waitBound(ctx); err != nil {
		return nil, err
	}
	return s.Create(ctx, m, o)
}

func leaseOwner(o Options) (string, int) {
	if o.Remote {
		return "remote", 0
	}
	host, _ := os.Hostname()
	return host, os.Getpid()
}

// waitBound returns once the host holds fewer databases than the bound,
// or a BoundError after BoundWait.
func (s *Server) waitBound(ctx context.Context) error {
	cfg := s.pools.cfg
	deadline := time.Now().Add(cfg.BoundWait)
	for {
		n, err := s.count(ctx, s.pool, "")
		if err != nil {
			return err
		}
		if n < cfg.Bound {
			return nil
		}
		if time.Now().After(deadline) {
			return &BoundError{Bound: cfg.Bound, Wait: cfg.BoundWait}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("databases: waiting below the bound of %d databases: %w", cfg.Bound, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Held is how many databases are handed out and not yet past their
// lease: not ready in the pool, not being filled.
func (s *Server) Held(ctx context.Context) (int, error) {
	var n int
	if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM sbx_databases WHERE NOT pooled AND host <> 'pool' AND host NOT LIKE 'pool@%' AND host NOT LIKE 'prefetch@%' AND expires_at > now()`).Scan(&n); err != nil {
		return 0, fmt.Errorf("databases: count the databases handed out: %w", err)
	}
	return n, nil
}

// count is the host's databases (tpl "") or a template's ready ones.
func (s *Server) count(ctx context.Context, pool *pgxpool.Pool, tpl string) (int, error) {
	var n int
	q, args := `SELECT count(*) FROM sbx_databases`, []any{}
	if tpl != "" {
		q, args = `SELECT count(*) FROM sbx_databases WHERE template = $1 AND pooled AND expires_at > now() + interval '5 minutes'`, []any{tpl}
	}
	if err := pool.QueryRow(ctx, q, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("databases: count: %w", err)
	}
	return n, nil
}

// refill raises the template's target on a miss (demand outran it) and
// starts a filler when none runs.
func (s *Server) refill(tpl string, missed bool) {
	p := s.pools
	p.mu.Lock()
	defer p.mu.Unlock()
	t, ok := p.templates[tpl]
	if !ok {
		t = &templatePool{target: p.cfg.Min}
		p.templates[tpl] = t
	}
	if missed {
		t.target = min(t.target*2, p.cfg.Max)
	}
	if t.filling >= p.cfg.Parallel || p.ctx.Err() != nil {
		return
	}
	t.filling++
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		s.fillLoop(tpl, t)
	}()
}

// fillLoop clones until the template's ready databases (from any
// process) reach its target, or the host its bound.
func (s *Server) fillLoop(tpl string, t *templatePool) {
	p := s.pools
	defer func() {
		p.mu.Lock()
		t.filling--
		p.mu.Unlock()
	}()
	for {
		ready, err := s.count(p.ctx, p.fill, tpl)
		if err != nil {
			return
		}
		total, err := s.count(p.ctx, p.fill, "")
		if err != nil {
			return
		}
		p.mu.Lock()
		target := t.target
		p.mu.Unlock()
		if ready >= target || total >= p.cfg.Bound {
			return
		}
		select {
		case p.slots <- struct{}{}:
		case <-p.ctx.Done():
			return
		}
		// Not cancelled by Close: a clone under way is finished (tens of
		// milliseconds) and left ready for the next process, rather than
		// thrown away; Close only stops new ones.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(p.ctx), cloneTimeout)
		err = s.clonePooled(ctx, tpl)
		cancel()
		<-p.slots
		if err != nil {
			return
		}
	}
}

// fillHost is the lease host of a clone being made (or made) for the
// pool by a process of host h: while it is not yet pooled, Reap drops it
// when that process is gone (killed mid-clone); once pooled it outlives
// its maker, and Take writes the taker over it.
func fillHost(h string) string { return "pool@" + h }

// clonePooled makes one ready database of tpl: its role cannot log in.
func (s *Server) clonePooled(ctx context.Context, tpl string) error {
	name := "sbxt_" + randomHex(8)
	h, _ := os.Hostname()
	if _, err := s.pools.fill.Exec(ctx, `INSERT INTO sbx_databases (name, role, template, expires_at, host, pid, pooled) VALUES ($1, $1, $2, now() + $3::interval, $4, $5, false)`,
		name, tpl, fmt.Sprintf("%d seconds", int(pooledLife.Seconds())), fillHost(h), os.Getpid()); err != nil {
		return fmt.Errorf("databases: pool lease: %w", err)
	}
	fail := func(err error) error {
		_ = s.drop(context.WithoutCancel(ctx), name)
		return fmt.Errorf("databases: pool clone %s: %w", name, err)
	}
	for _, q := range []string{
		fmt.Sprintf(`CREATE ROLE %s NOLOGIN PASSWORD NULL NOSUPERUSER NOCREATEROLE NOCREATEDB NOREPLICATION NOBYPASSRLS`, ident(name)),
		fmt.Sprintf(`CREATE DATABASE %s TEMPLATE %s OWNER %s STRATEGY FILE_COPY`, ident(name), ident(tpl), ident(name)),
		fmt.Sprintf(`REVOKE CONNECT, TEMPORARY ON DATABASE %s FROM PUBLIC`, ident(name)),
	} {
		if _, err := s.pools.fill.Exec(ctx, q); err != nil {
			return fail(err)
		}
	}
	cfg := s.pools.fill.Config().ConnConfig.Copy()
	cfg.Database = name
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		return fail(err)
	}
	_, err = conn.Exec(ctx, fmt.Sprintf(`REASSIGN OWNED BY %s TO %s`, ident(templateRole(tpl)), ident(name)))
	conn.Close(context.WithoutCancel(ctx))
	if err != nil {
		return fail(err)
	}
	// Takeable only now, whole.
	if _, err := s.pools.fill.Exec(ctx, `UPDATE sbx_databases SET pooled = true WHERE name = $1`, name); err != nil {
		return fail(err)
	}
	return nil
}
