package postgres

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sandboxer/sandboxer/state"
)

// Warm keeps one logged-in connection per instance for the liveness probes
// of a long-running process (serve): a repeated probe is then a round trip
// on it rather than a SCRAM login, which is most of a probe's time (about
// 10 ms on this machine). It is still a probe with the handed-out
// credentials: the connection was opened with them, and a server that
// went away fails the round trip, after which Ping logs in afresh, so a
// dead server is still seen as one. The zero value is ready to use; it is
// safe for concurrent use (a probe that finds its instance's connection
// busy logs in on its own instead of waiting).
//
// Connections are keyed by every part of the credentials, the password
// included, so rotated credentials never reuse an older login. Close
// closes them all; Forget one instance's. Connections idle for warmIdle
// are closed by later calls.
type Warm struct {
	mu    sync.Mutex
	conns map[string]*warmConn
}

type warmConn struct {
	busy     sync.Mutex // held while the connection is in use
	conn     *pgx.Conn
	lastUsed time.Time // under Warm.mu
}

const (
	// warmMax bounds the connections kept; past it the oldest idle one
	// is closed.
	warmMax = 64
	// warmIdle is how long a connection nobody probed stays open.
	warmIdle = 5 * time.Minute
)

// Ping is the liveness probe of c: SELECT 1 on the kept connection, else
// a fresh login (Ready) whose connection is kept for the next probe.
func (w *Warm) Ping(ctx context.Context, c state.Credentials, tlsConf *tls.Config) error {
	wc := w.entry(warmKey(c))
	if !wc.busy.TryLock() {
		return Ping(ctx, c.Host, c.Port, c.User, c.Password, c.Database, tlsConf)
	}
	defer wc.busy.Unlock()
	if wc.conn != nil {
		var one int
		err := wc.conn.QueryRow(ctx, "SELECT 1").Scan(&one)
		if err == nil {
			return nil
		}
		closeQuietly(wc.conn)
		wc.conn = nil
		if ctx.Err() != nil {
			return fmt.Errorf("SELECT 1: %w", err)
		}
	}
	conn, err := Ready(ctx, c, tlsConf)
	if err != nil {
		return err
	}
	wc.conn = conn
	return nil
}

// entry finds or makes the instance's slot, closing idle connections on
// the way.
func (w *Warm) entry(key string) *warmConn {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.conns == nil {
		w.conns = map[string]*warmConn{}
	}
	now := time.Now()
	var oldestKey string
	var oldest time.Time
	for k, wc := range w.conns {
		if k == key {
			continue
		}
		if now.Sub(wc.lastUsed) > warmIdle && wc.busy.TryLock() {
			closeQuietly(wc.conn)
			wc.busy.Unlock()
			delete(w.conns, k)
			continue
		}
		if oldestKey == "" || wc.lastUsed.Before(oldest) {
			oldestKey, oldest = k, wc.lastUsed
		}
	}
	wc, ok := w.conns[key]
	if !ok {
		if len(w.conns) >= warmMax && oldestKey != "" {
			if old := w.conns[oldestKey]; old.busy.TryLock() {
				closeQuietly(old.conn)
				old.busy.Unlock()
				delete(w.conns, oldestKey)
			}
		}
		wc = &warmConn{}
		w.conns[key] = wc
	}
	wc.lastUsed = now
	return wc
}

// Forget closes the connection kept for c (its instance is being removed).
func (w *Warm) Forget(c state.Credentials) {
	key := warmKey(c)
	w.mu.Lock()
	wc, ok := w.conns[key]
	delete(w.conns, key)
	w.mu.Unlock()
	if ok {
		wc.busy.Lock()
		closeQuietly(wc.conn)
		wc.busy.Unlock()
	}
}

// Close closes every kept connection.
func (w *Warm) Close() {
	w.mu.Lock()
	conns := w.conns
	w.conns = nil
	w.mu.Unlock()
	for _, wc := range conns {
		wc.busy.Lock()
		closeQuietly(wc.conn)
		wc.busy.Unlock()
	}
}

func closeQuietly(conn *pgx.Conn) {
	if conn == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_ = conn.Close(ctx)
}

// warmKey identifies credentials without holding the password in the
// clear.
func warmKey(c state.Credentials) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%d\x00%s\x00%s\x00%s\x00%s", c.Host, c.Port, c.User, c.Database, c.Password.Reveal(), c.CA)
	return hex.EncodeToString(h.Sum(nil))
}
