package pgstate

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sandboxer/sandboxer/state"
)

// Polling bounds while waiting for a lock: pg_try_advisory_lock does not
// wait, and a blocking pg_advisory_lock would tie up the one connection.
const (
	lockPollMin = 5 * time.Millisecond
	lockPollMax = 100 * time.Millisecond
)

// locker holds one Backend value's locks: session advisory locks on one
// dedicated connection (so they end with the process or the connection),
// plus the set held through it. Advisory locks are re-entrant within a
// session, so contention inside this value is decided by that set.
type locker struct {
	db    *DB
	where string

	mu     sync.Mutex // serialises use of conn
	conn   *pgx.Conn
	schema string
	// held maps each lock held through conn to its holder id, so that an
	// unlock releases only its own lock (not one taken again after the
	// connection was lost and remade).
	held map[int64]string
}

func (l *locker) close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		return nil
	}
	err := l.conn.Close(context.Background())
	l.conn, l.held = nil, nil
	return err
}

// connLocked returns the dedicated connection, opening it (and making the
// tables, for the holder rows) on first use. l.mu is held.
func (l *locker) connLocked(ctx context.Context) (*pgx.Conn, error) {
	if l.conn != nil && !l.conn.IsClosed() {
		return l.conn, nil
	}
	// First use, or the connection died (a server restart) and took its
	// locks with it: their holders' unlocks become no-ops, and a new
	// connection serves new locks, so a long-lived serve recovers.
	c, err := l.db.conn(ctx)
	if err != nil {
		return nil, err
	}
	err = pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, `SELECT current_schema()`).Scan(&l.schema); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass('sandboxer_locks') IS NOT NULL`).Scan(&exists); err != nil || exists {
			return err
		}
		return createTables(ctx, tx)
	})
	if err != nil {
		c.Close(ctx)
		return nil, l.db.scrub(fmt.Errorf("prepare the lock connection to %s: %w", l.where, err))
	}
	l.conn, l.held = c, map[int64]string{}
	return c, nil
}

// lockKey maps a lock to an advisory lock key, distinct per schema so
// that states in two schemas of one database do not share locks.
func lockKey(schema, addr string) int64 {
	sum := sha256.Sum256([]byte("sandboxer state lock\x00" + schema + "\x00" + addr))
	return int64(binary.BigEndian.Uint64(sum[:8]))
}

func (l *locker) acquire(ctx context.Context, addr, operation string, timeout time.Duration) (func() error, error) {
	deadline := time.Now().Add(timeout)
	lockName := "state"
	if addr != "" {
		lockName = "instance " + addr
	}
	for poll := lockPollMin; ; poll = min(2*poll, lockPollMax) {
		unlock, key, err := l.try(ctx, addr, operation)
		if err != nil || unlock != nil {
			return unlock, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, l.lockedError(ctx, key, addr, lockName)
		}
		t := time.NewTimer(min(poll, left))
		select {
		case <-ctx.Done():
			t.Stop()
			lerr := l.lockedError(context.WithoutCancel(ctx), key, addr, lockName)
			return nil, fmt.Errorf("%w: %w", lerr, ctx.Err())
		case <-t.C:
		}
	}
}

// try takes the lock if it is free; a nil unlock and nil error mean it is
// held by someone else.
func (l *locker) try(ctx context.Context, addr, operation string) (func() error, int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, err := l.connLocked(ctx)
	if err != nil {
		return nil, 0, err
	}
	key := lockKey(l.schema, addr)
	if _, busy := l.held[key]; busy {
		return nil, key, nil
	}
	var got bool
	if err := c.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, key).Scan(&got); err != nil {
		return nil, key, l.db.scrub(fmt.Errorf("lock %s: %w", l.where, err))
	}
	if !got {
		return nil, key, nil
	}
	info := state.NewLockInfo(operation, l.where, addr)
	data, _ := json.Marshal(info)
	_, err = c.Exec(ctx, `INSERT INTO sandboxer_locks (lock_key, address, info) VALUES ($1, $2, $3)
		ON CONFLICT (lock_key) DO UPDATE SET address = EXCLUDED.address, info = EXCLUDED.info`, key, addr, data)
	if err != nil {
		_, _ = c.Exec(ctx, `SELECT pg_advisory_unlock($1)`, key)
		return nil, key, l.db.scrub(fmt.Errorf("record the lock holder in %s: %w", l.where, err))
	}
	l.held[key] = info.ID
	var once sync.Once
	var uerr error
	return func() error {
		once.Do(func() { uerr = l.release(key, info.ID) })
		return uerr
	}, key, nil
}

// release clears the holder row (only if still ours) and then the lock.
func (l *locker) release(key int64, id string) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.held[key] != id || l.conn == nil || l.conn.IsClosed() {
		return nil // the connection, and with it the lock, is gone
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err1 := l.conn.Exec(ctx, `DELETE FROM sandboxer_locks WHERE lock_key = $1 AND info->>'id' = $2`, key, id)
	_, err2 := l.conn.Exec(ctx, `SELECT pg_advisory_unlock($1)`, key)
	delete(l.held, key)
	if err := errors.Join(err1, err2); err != nil {
		return l.db.scrub(fmt.Errorf("unlock %s: %w", l.where, err))
	}
	return nil
}

// lockedError reads who holds key from the holder rows.
func (l *locker) lockedError(ctx context.Context, key int64, addr, name string) error {
	e := &state.LockedError{Path: l.where + " (" + name + " lock)", Address: addr}
	pool, err := l.db.get(ctx)
	if err != nil {
		return e
	}
	var data []byte
	if pool.QueryRow(ctx, `SELECT info FROM sandboxer_locks WHERE lock_key = $1`, key).Scan(&data) == nil {
		var h state.LockInfo
		if json.Unmarshal(data, &h) == nil {
			e.Holder = h
		}
	}
	return e
}

// Lock takes the whole-state lock (see state.Backend).
func (b *Backend) Lock(ctx context.Context, operation string, timeout time.Duration) (func() error, error) {
	return b.locks.acquire(ctx, "", operation, timeout)
}

// LockInstance takes one address's lock (see state.Backend).
func (b *Backend) LockInstance(ctx context.Context, addr, operation string, timeout time.Duration) (func() error, error) {
	if addr == "" {
		return nil, errors.New("lock instance: empty address")
	}
	return b.locks.acquire(ctx, addr, operation, timeout)
}
