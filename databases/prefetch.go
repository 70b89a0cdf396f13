package databases

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"
)

// Prefetch: a process that keeps asking for databases of a template (a
// test binary using the library, serve) claims a few ready ones ahead,
// so that a hand-out is a receive from memory, not a round trip to the
// server. A prefetched database is claimed as Take claims one (its role
// given LOGIN and a verifier of a password only this process holds, its
// lease in this process's name, host "prefetch@HOST"); at hand-out its
// lease is rewritten to the caller's (in the background). Close gives the
// ones never handed out back to the pool (NOLOGIN, no password: as made),
// and a process killed with some leaves leases reap drops by its pid.

// prefetchDepth is how many databases a template keeps claimed ahead,
// and prefetchAfter how many hand-outs of a template a server makes
// before it starts (a process that opens the library per test, as
// sandboxertest.Database does, takes one and never prefetches).
const (
	prefetchDepth = 2
	prefetchAfter = 2
	// prefetchFresh: one claimed longer ago than this is given back
	// rather than handed out (its lease, an hour, must still hold the
	// caller's TTL's start).
	prefetchFresh = 10 * time.Minute
)

type prefetched struct {
	d  *Database
	at time.Time
}

// prefetcher is a server's claimed-ahead databases, by template.
type prefetcher struct {
	mu      sync.Mutex
	takes   map[string]int
	ready   map[string][]prefetched
	running map[string]bool
}

func prefetchHost(h string) string { return "prefetch@" + h }

// fromPrefetch hands out one claimed-ahead database of tpl when o allows
// (no CREATEDB: the role was claimed without it), counting the take and
// starting the claiming ahead once the template is asked for often.
func (s *Server) fromPrefetch(tpl string, o Options) *Database {
	p := &s.prefetch
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.takes == nil {
		p.takes, p.ready, p.running = map[string]int{}, map[string][]prefetched{}, map[string]bool{}
	}
	p.takes[tpl]++
	var d *Database
	for len(p.ready[tpl]) > 0 && d == nil && !o.CreateDB {
		f := p.ready[tpl][0]
		p.ready[tpl] = p.ready[tpl][1:]
		if time.Since(f.at) < prefetchFresh {
			d = f.d
			continue
		}
		s.giveBackLater(f.d.Name)
	}
	if p.takes[tpl] >= prefetchAfter && !p.running[tpl] && len(p.ready[tpl]) < prefetchDepth && s.pools.ctx.Err() == nil {
		p.running[tpl] = true
		s.pools.wg.Add(1)
		go func() {
			defer s.pools.wg.Done()
			s.claimAhead(tpl)
		}()
	}
	if d != nil && !o.ExactLease {
		s.pools.wg.Add(1)
		go func() {
			defer s.pools.wg.Done()
			ctx, cancel := context.WithTimeout(context.WithoutCancel(s.pools.ctx), cloneTimeout)
			defer cancel()
			_ = s.leaseTo(ctx, d.Name, o)
		}()
	}
	return d
}

// leaseTo writes the caller's lease over a database claimed ahead.
func (s *Server) leaseTo(ctx context.Context, name string, o Options) error {
	host, pid := leaseOwner(o)
	_, err := s.pools.fill.Exec(ctx, `UPDATE sbx_databases SET host = $2, pid = $3, expires_at = now() + $4::interval WHERE name = $1`,
		name, host, pid, fmt.Sprintf("%d seconds", int(o.TTL.Seconds())))
	return err
}

// claimAhead claims ready databases of tpl until prefetchDepth are held
// or none is ready (the refill makes more; the next hand-out asks again).
func (s *Server) claimAhead(tpl string) {
	p := &s.prefetch
	defer func() {
		p.mu.Lock()
		p.running[tpl] = false
		p.mu.Unlock()
	}()
	h, _ := os.Hostname()
	for {
		p.mu.Lock()
		n := len(p.ready[tpl])
		p.mu.Unlock()
		if n >= prefetchDepth || s.pools.ctx.Err() != nil {
			return
		}
		sec, err := s.pools.secret()
		if err != nil {
			return
		}
		// Not cancelled by Close: a claim the server made must reach
		// this process, to be handed out or given back.
		var name *string
		ctx, cancel := context.WithTimeout(context.WithoutCancel(s.pools.ctx), cloneTimeout)
		err = s.pools.fill.QueryRow(ctx, `SELECT sbx_take_v1($1, $2, false, $3::interval, $4, $5)`,
			tpl, sec.verifier, fmt.Sprintf("%d seconds", int(pooledLife.Seconds())), prefetchHost(h), os.Getpid()).Scan(&name)
		cancel()
		if err != nil || name == nil {
			return
		}
		s.refill(tpl, false)
		d := &Database{Name: *name, Role: *name, Password: sec.password, Host: s.host, Port: s.port, Template: tpl}
		p.mu.Lock()
		if s.pools.ctx.Err() != nil {
			p.mu.Unlock()
			s.giveBack(context.Background(), d.Name)
			return
		}
		p.ready[tpl] = append(p.ready[tpl], prefetched{d: d, at: time.Now()})
		p.mu.Unlock()
	}
}

// giveBack returns a claimed database that was never handed out to the
// pool, as it was made: its role cannot log in, has no password.
func (s *Server) giveBack(ctx context.Context, name string) {
	ctx, cancel := context.WithTimeout(ctx, cloneTimeout)
	defer cancel()
	h, _ := os.Hostname()
	_, _ = s.pools.fill.Exec(ctx, fmt.Sprintf(`ALTER ROLE %s NOLOGIN PASSWORD NULL`, ident(name)))
	_, _ = s.pools.fill.Exec(ctx, `UPDATE sbx_databases SET pooled = true, host = $2, expires_at = now() + $3::interval WHERE name = $1`,
		name, fillHost(h), fmt.Sprintf("%d seconds", int(pooledLife.Seconds())))
}

func (s *Server) giveBackLater(name string) {
	s.pools.wg.Add(1)
	go func() {
		defer s.pools.wg.Done()
		s.giveBack(context.WithoutCancel(s.pools.ctx), name)
	}()
}

// closePrefetch gives back every database claimed ahead and not handed
// out (the background is stopped: no claim is under way).
func (s *Server) closePrefetch() {
	p := &s.prefetch
	p.mu.Lock()
	var names []string
	for tpl, fs := range p.ready {
		for _, f := range fs {
			names = append(names, f.d.Name)
		}
		p.ready[tpl] = nil
	}
	p.mu.Unlock()
	for _, n := range names {
		s.giveBack(context.Background(), n)
	}
}
