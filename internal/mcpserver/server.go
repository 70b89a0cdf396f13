// Package mcpserver serves the library to agents over the Model Context
// Protocol, with the official Go SDK (github.com/modelcontextprotocol/
// go-sdk): `sandboxer mcp` over stdio, and the same server over
// streamable HTTP from `sandboxer serve`, behind its bearer token.
//
// Tools take JSON objects with input schemas and answer with structured
// results in the API's types (api.Sandbox, api.Instance, ...). A refused
// call is a tool error an agent can act on: the code, the message (which
// names the allowlist, the profiles, or what to request instead) and
// nothing secret.
//
// What this package must never do: put a credential anywhere but the
// result of request_sandbox (not in a log, an error or another tool's
// result), or decide anything about sandboxes itself: it translates tool
// calls to library calls.
package mcpserver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/api"
)

// Library is what the MCP server serves; *sandboxer.Sandboxer implements
// it.
type Library interface {
	Request(ctx context.Context, address string, o sandboxer.RequestOptions) (*api.Sandbox, error)
	Release(ctx context.Context, address, key string) (bool, error)
	Extend(ctx context.Context, address, key, ttl string) (*api.Instance, error)
	Sandboxes(ctx context.Context) (*api.SandboxList, error)
	Snapshot(ctx context.Context, address, name string) (*api.DataResult, error)
	Reset(ctx context.Context, address, name string) (*api.DataResult, error)
	Features(ctx context.Context) (*api.FeatureList, error)
	Fork(ctx context.Context, address string, o sandboxer.ForkOptions) (*api.ForkResult, error)
	// Leases (see sandboxer.Holder): who holds an instance, across
	// processes.
	Hold(ctx context.Context, address string, h sandboxer.Holder) error
	Unhold(ctx context.Context, address, holder string) error
	ReleaseUnheld(ctx context.Context, address, holder string) (released bool, held int, err error)
}

var _ Library = (*sandboxer.Sandboxer)(nil)

// Options configure New.
type Options struct {
	// Version is reported to clients.
	Version string
	// ReleaseOnDisconnect releases every instance a session requested
	// when the session ends (stdin closed, HTTP session deleted), unless
	// another session still holds it: in this process or in any other
	// sharing the state (leases, renewed while the session lives).
	ReleaseOnDisconnect bool
	// LeaseTTL is how long a session's lease lives without a heartbeat
	// (default ondemand's DefaultLeaseTTL, 30 s).
	LeaseTTL time.Duration
	// Logger gets one record per tool call (tool, address, outcome),
	// never an argument's value that could be secret; nil discards.
	Logger *slog.Logger
	// Stateless: every call may come to another replica (serve's /mcp
	// over streamable HTTP without sessions), so there is no session to
	// default a key from or to hold leases for: tools need a key, and an
	// instance ends by its ttl (extend_sandbox is the heartbeat).
	Stateless bool
	// Base bounds the calls (and the releases at disconnect) instead of
	// the client's connection, as for the HTTP API: a client that goes
	// away mid-provision does not abort it. Nil never ends.
	Base context.Context
}

// Server is one MCP server; it serves any number of sessions.
type Server struct {
	lib  Library
	opts Options
	mcp  *mcp.Server

	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*session
	watching sync.WaitGroup // one per session, until its end is handled
	stop     chan struct{}  // ends the heartbeat (Wait)
	stopOnce sync.Once
}

// session is what one client session requested, for its default key and
// for releasing at disconnect.
type session struct {
	key       string
	holder    string          // its leases' holder, unique to it
	requested map[string]bool // instance addresses
}

// releaseTimeout bounds one release at disconnect: releases run at once,
// so a session's end takes about the slowest of them.
const releaseTimeout = 2 * time.Minute

// New builds the server and its tools.
func New(lib Library, o Options) *Server {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Base == nil {
		o.Base = context.Background()
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = 30 * time.Second
	}
	s := &Server{lib: lib, opts: o, sessions: map[*mcp.ServerSession]*session{}, stop: make(chan struct{})}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "sandboxer", Version: o.Version}, &mcp.ServerOptions{
		Instructions: "Disposable PostgreSQL and Redis sandboxes. request_sandbox returns ready-to-export " +
			"credentials (env) for an on-demand sandbox block; list_features says which extensions may be asked " +
			"for; release_sandbox when your work ends.",
	})
	s.mcp.AddReceivingMiddleware(codedRefusals)
	s.addTools()
	go s.heartbeat()
	return s
}

// Wait blocks until every session that ended has been handled (its
// instances released, with ReleaseOnDisconnect), then stops renewing
// leases; `sandboxer mcp` calls it once stdin closed, before exiting.
func (s *Server) Wait() {
	s.watching.Wait()
	s.stopOnce.Do(func() { close(s.stop) })
}

// heartbeat renews the leases of the live sessions every third of their
// lifetime, until Wait or the base context ends.
func (s *Server) heartbeat() {
	tick := time.NewTicker(s.opts.LeaseTTL / 3)
	defer tick.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-s.opts.Base.Done():
			return
		case <-tick.C:
		}
		type held struct{ addr, holder string }
		var all []held
		s.mu.Lock()
		for _, sess := range s.sessions {
			for a := range sess.requested {
				all = append(all, held{a, sess.holder})
			}
		}
		s.mu.Unlock()
		for _, h := range all {
			ctx, cancel := context.WithTimeout(s.opts.Base, s.opts.LeaseTTL/3)
			if err := s.lib.Hold(ctx, h.addr, s.holderOf(h.holder)); err != nil {
				s.opts.Logger.Warn("lease renewal failed", "address", h.addr, "error", sandboxer.Classify(err).Message)
			}
			cancel()
		}
	}
}

// holderOf is the lease identity of a session's holder id.
func (s *Server) holderOf(id string) sandboxer.Holder {
	return sandboxer.Holder{ID: id, Release: s.opts.ReleaseOnDisconnect, TTL: s.opts.LeaseTTL}
}

// Close ends every session (serve's shutdown: an open event stream would
// otherwise hold it for its whole timeout). Sessions that end are
// handled as any end: with ReleaseOnDisconnect, their instances are
// released; Wait waits for that.
func (s *Server) Close() {
	for ss := range s.mcp.Sessions() {
		_ = ss.Close()
	}
}

// MCP is the SDK server, to run over a transport or an HTTP handler.
func (s *Server) MCP() *mcp.Server { return s.mcp }

// session returns the record of ss, making it on first use with a key of
// its own (the default key of request_sandbox) and a watcher: when the
// session ends, what it requested is released (with ReleaseOnDisconnect)
// and it is forgotten. On first use, not at initialization: a client of
// a newer protocol revision need not send "initialized".
func (s *Server) session(ss *mcp.ServerSession) *session {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess, ok := s.sessions[ss]; ok {
		return sess
	}
	key := ss.ID()
	if key == "" || len(key) > 40 {
		key = randomKey()
	}
	sess := &session{key: "mcp-" + sanitizeKey(key), requested: map[string]bool{}}
	sess.holder = sess.key + "-" + randomKey()
	s.sessions[ss] = sess
	s.watching.Add(1)
	go func() {
		defer s.watching.Done()
		_ = ss.Wait()
		s.mu.Lock()
		delete(s.sessions, ss)
		s.mu.Unlock()
		if s.opts.ReleaseOnDisconnect {
			s.releaseAll(sess)
		}
	}()
	return sess
}

// hold records the session's lease on address before a request, so that
// a last holder releasing meanwhile (in any process) sees it; had says
// the session already held it.
func (s *Server) hold(ctx context.Context, ss *mcp.ServerSession, address string) (had bool, err error) {
	sess := s.session(ss)
	s.mu.Lock()
	had = sess.requested[address]
	// Noted at once, so that the heartbeat renews the lease while the
	// request waits for a provision (which can outlast a lease).
	sess.requested[address] = true
	s.mu.Unlock()
	return had, s.lib.Hold(ctx, address, s.holderOf(sess.holder))
}

func (s *Server) noteRequested(ss *mcp.ServerSession, address string) {
	sess := s.session(ss)
	s.mu.Lock()
	sess.requested[address] = true
	s.mu.Unlock()
}

// unhold forgets a request that failed (had: the session held the
// instance before it).
func (s *Server) unhold(ctx context.Context, ss *mcp.ServerSession, address string, had bool) {
	if had {
		return
	}
	sess := s.session(ss)
	s.mu.Lock()
	delete(sess.requested, address)
	s.mu.Unlock()
	if err := s.lib.Unhold(ctx, address, s.session(ss).holder); err != nil {
		s.opts.Logger.Warn("unhold failed", "address", address, "error", sandboxer.Classify(err).Message)
	}
}

func (s *Server) noteReleased(ss *mcp.ServerSession, address string) {
	sess := s.session(ss)
	s.mu.Lock()
	delete(sess.requested, address)
	s.mu.Unlock()
	if err := s.lib.Unhold(s.opts.Base, address, sess.holder); err != nil {
		s.opts.Logger.Warn("unhold failed", "address", address, "error", sandboxer.Classify(err).Message)
	}
}

// releaseAll lets go of what an ended session requested, all at once:
// with ReleaseOnDisconnect an instance is released unless another holder,
// in this process or any other sharing the state, is alive; else only
// the session's leases go. What a cut-short release leaves (a dead
// release-on-end lease, a record) is the reaper's.
func (s *Server) releaseAll(sess *session) {
	s.mu.Lock()
	addrs := make([]string, 0, len(sess.requested))
	for a := range sess.requested {
		addrs = append(addrs, a)
	}
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, a := range addrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(s.opts.Base, releaseTimeout)
			defer cancel()
			if !s.opts.ReleaseOnDisconnect {
				if err := s.lib.Unhold(ctx, a, sess.holder); err != nil {
					s.opts.Logger.Warn("unhold at disconnect failed", "address", a, "error", sandboxer.Classify(err).Message)
				}
				return
			}
			released, held, err := s.lib.ReleaseUnheld(ctx, a, sess.holder)
			if err != nil {
				s.opts.Logger.Error("release at disconnect failed", "address", a, "error", sandboxer.Classify(err).Message)
				return
			}
			s.opts.Logger.Info("released at disconnect", "address", a, "released", released, "other_holders", held)
		}()
	}
	wg.Wait()
}

// call runs a library call on the base context, not the client's, for
// the tenant the client's call was authenticated as (serve's /mcp).
func (s *Server) call(ctx context.Context) (context.Context, context.CancelFunc) {
	base := context.WithoutCancel(s.opts.Base)
	if t := sandboxer.TenantOf(ctx); t != nil {
		base = sandboxer.WithTenant(base, t)
	}
	return context.WithCancel(base)
}

// toolError is what an agent reads when a call is refused: the code and
// the message, which already names what to do (the allowlist, the
// profiles); never a credential (library errors hold none).
func toolError(err error) error {
	e := sandboxer.Classify(err)
	msg := fmt.Sprintf("%s: %s", e.Code, e.Message)
	if len(e.Allowed) > 0 && !strings.Contains(e.Message, "allowed:") {
		msg += "; allowed: " + strings.Join(e.Allowed, ", ")
	}
	return fmt.Errorf("%s", msg)
}

func randomKey() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// sanitizeKey keeps a session id within the key alphabet
// ([A-Za-z0-9_.-]).
func sanitizeKey(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return randomKey()
	}
	return b.String()
}
