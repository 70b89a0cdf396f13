package state

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// LockInfo says who holds a lock. The holder writes it into the lock file
// right after taking the lock, so that a waiter can say who it waits for.
type LockInfo struct {
	ID        string    `json:"id"`
	Operation string    `json:"operation"`
	PID       int       `json:"pid"`
	Host      string    `json:"host"`
	Who       string    `json:"who"`
	Since     time.Time `json:"since"`
	// Path is the state file the lock protects.
	Path string `json:"path"`
	// Address is the instance held by LockInstance; "" for the state lock.
	Address string `json:"address,omitempty"`
}

// LockedError reports that a lock is held by someone else. Callers test
// for it with errors.As.
type LockedError struct {
	// Path is the lock file.
	Path string
	// Address is the instance asked for; "" for the whole-state lock.
	Address string
	// Holder is what the holder wrote into the lock file; zero when it
	// could not be read (the holder was between taking the lock and
	// writing it).
	Holder LockInfo
}

func (e *LockedError) Error() string {
	what := "state"
	if e.Address != "" {
		what = fmt.Sprintf("instance %s", e.Address)
	}
	h := e.Holder
	if h.PID == 0 {
		return fmt.Sprintf("%s is locked by another process (lock file %s)", what, e.Path)
	}
	return fmt.Sprintf("%s is locked by pid %d on host %s (operation %q, since %s, %s ago)",
		what, h.PID, h.Host, h.Operation, h.Since.Format(time.RFC3339), time.Since(h.Since).Round(time.Second))
}

// Lock takes the whole-state operation lock (plan/apply/destroy/state rm),
// waiting up to timeout (0 = fail at once). Contention is a *LockedError.
// The lock is a flock on "<path>.lock", so the kernel releases it if this
// process dies. Lock creates the state's folder if needed, but not the
// state file. unlock is safe to call more than once.
func (s *Store) Lock(ctx context.Context, operation string, timeout time.Duration) (unlock func() error, err error) {
	if err := s.ready(ctx); err != nil {
		return nil, fmt.Errorf("lock state: %w", err)
	}
	dir := filepath.Dir(s.path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("lock state: create folder %s: %w", dir, err)
	}
	return acquire(ctx, s.path+".lock", LockInfo{Operation: operation, Path: s.path}, timeout)
}

// LockInstance takes the lock for one instance address only, with Lock's
// semantics. Instance locks are independent of each other and of the
// state lock. Lock files live in "<path>.locks/", named by the SHA-256 of
// the address so that any address makes a safe file name. They are never
// removed: removing a flock'ed file races with a waiter that has it open.
func (s *Store) LockInstance(ctx context.Context, addr, operation string, timeout time.Duration) (unlock func() error, err error) {
	if err := s.ready(ctx); err != nil {
		return nil, fmt.Errorf("lock instance %s: %w", addr, err)
	}
	if addr == "" {
		return nil, errors.New("lock instance: empty address")
	}
	dir := s.path + ".locks"
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("lock instance %s: create folder %s: %w", addr, dir, err)
	}
	sum := sha256.Sum256([]byte(addr))
	name := filepath.Join(dir, hex.EncodeToString(sum[:])+".lock")
	return acquire(ctx, name, LockInfo{Operation: operation, Path: s.path, Address: addr}, timeout)
}

// Polling bounds while waiting for a lock: flock has no timed wait.
const (
	lockPollMin = 5 * time.Millisecond
	lockPollMax = 100 * time.Millisecond
)

func acquire(ctx context.Context, name string, info LockInfo, timeout time.Duration) (func() error, error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file %s: %w", name, err)
	}
	fd := int(f.Fd())
	deadline := time.Now().Add(timeout)
	for poll := lockPollMin; ; poll = min(2*poll, lockPollMax) {
		err := flockNB(fd)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
		left := time.Until(deadline)
		if left <= 0 {
			lerr := lockedError(f, name, info.Address)
			f.Close()
			return nil, lerr
		}
		t := time.NewTimer(min(poll, left))
		select {
		case <-ctx.Done():
			t.Stop()
			lerr := lockedError(f, name, info.Address)
			f.Close()
			return nil, fmt.Errorf("%w: %w", lerr, ctx.Err())
		case <-t.C:
		}
	}

	info.ID = newID()
	info.PID = os.Getpid()
	info.Host = hostname()
	info.Who = whoAmI()
	info.Since = time.Now().UTC().Round(0)
	data, err := json.Marshal(info)
	if err == nil {
		err = f.Truncate(0)
	}
	if err == nil {
		_, err = f.WriteAt(data, 0)
	}
	if err != nil {
		f.Close() // releases the flock
		return nil, fmt.Errorf("write lock info to %s: %w", name, err)
	}

	var once sync.Once
	var uerr error
	return func() error {
		once.Do(func() {
			// Clear the holder info before releasing, so it never
			// describes a lock nobody holds.
			uerr = errors.Join(f.Truncate(0), unix.Flock(fd, unix.LOCK_UN), f.Close())
			if uerr != nil {
				uerr = fmt.Errorf("unlock %s: %w", name, uerr)
			}
		})
		return uerr
	}, nil
}

func flockNB(fd int) error {
	for {
		err := unix.Flock(fd, unix.LOCK_EX|unix.LOCK_NB)
		if err != unix.EINTR {
			return err
		}
	}
}

// lockedError reads the holder's info from the lock file. A holder that
// has not written it yet (or is rewriting it) leaves the Holder zero.
func lockedError(f *os.File, name, addr string) *LockedError {
	e := &LockedError{Path: name, Address: addr}
	data, err := io.ReadAll(io.NewSectionReader(f, 0, 1<<16))
	if err == nil && len(data) > 0 {
		var h LockInfo
		if json.Unmarshal(data, &h) == nil {
			e.Holder = h
		}
	}
	return e
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "unknown"
	}
	return h
}

func whoAmI() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if v := os.Getenv("USER"); v != "" {
		return v
	}
	return strconv.Itoa(os.Getuid())
}
