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
}

var _ Library = (*sandboxer.Sandboxer)(nil)

// Options configure New.
type Options struct {
	// Version is reported to clients.
	Version string
	// ReleaseOnDisconnect releases every instance a session requested
	// when the session ends (stdin closed, HTTP session deleted), unless
	// a session still connected requested it too.
	ReleaseOnDisconnect bool
	// Logger gets one record per tool call (tool, address, outcome),
	// never an argument's value that could be secret; nil discards.
	Logger *slog.Logger
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
}

// session is what one client session requested, for its default key and
// for releasing at disconnect.
type session struct {
	key       string
	requested map[string]bool // instance addresses
}

// New builds the server and its tools.
func New(lib Library, o Options) *Server {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Base == nil {
		o.Base = context.Background()
	}
	s := &Server{lib: lib, opts: o, sessions: map[*mcp.ServerSession]*session{}}
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "sandboxer", Version: o.Version}, &mcp.ServerOptions{
		Instructions: "Disposable PostgreSQL and Redis sandboxes. request_sandbox returns ready-to-export " +
			"credentials (env) for an on-demand sandbox block; list_features says which extensions may be asked " +
			"for; release_sandbox when your work ends.",
	})
	s.addTools()
	return s
}

// Wait blocks until every session that ended has been handled (its
// instances released, with ReleaseOnDisconnect); `sandboxer mcp` calls it
// once stdin closed, before exiting.
func (s *Server) Wait() { s.watching.Wait() }

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

func (s *Server) noteRequested(ss *mcp.ServerSession, address string) {
	sess := s.session(ss)
	s.mu.Lock()
	sess.requested[address] = true
	s.mu.Unlock()
}

func (s *Server) noteReleased(ss *mcp.ServerSession, address string) {
	sess := s.session(ss)
	s.mu.Lock()
	delete(sess.requested, address)
	s.mu.Unlock()
}

// releaseAll releases what an ended session requested, except what a
// session still connected requested too: that one is still in use.
func (s *Server) releaseAll(sess *session) {
	s.mu.Lock()
	addrs := make([]string, 0, len(sess.requested))
	for a := range sess.requested {
		shared := false
		for _, other := range s.sessions {
			shared = shared || other.requested[a]
		}
		if !shared {
			addrs = append(addrs, a)
		}
	}
	s.mu.Unlock()
	for _, a := range addrs {
		ctx, cancel := context.WithTimeout(s.opts.Base, 2*time.Minute)
		released, err := s.lib.Release(ctx, a, "")
		cancel()
		if err != nil {
			s.opts.Logger.Error("release at disconnect failed", "address", a, "error", sandboxer.Classify(err).Message)
			continue
		}
		s.opts.Logger.Info("released at disconnect", "address", a, "released", released)
	}
}

// call runs a library call on the base context, not the client's.
func (s *Server) call(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithCancel(context.WithoutCancel(s.opts.Base))
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
