package pgstate_test

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sandboxer/sandboxer/internal/testenv"
	"github.com/sandboxer/sandboxer/state"
	"github.com/sandboxer/sandboxer/state/pgstate"
	"github.com/sandboxer/sandboxer/state/statetest"
)

// The helper process: with PGSTATE_HOLD_URL set, the test binary takes
// the state lock and an instance lock there, says so, and waits to be
// killed.
func TestMain(m *testing.M) {
	if u := os.Getenv("PGSTATE_HOLD_URL"); u != "" {
		b := pgstate.Open(pgstate.NewDB(u), nil)
		ctx := context.Background()
		if _, err := b.Lock(ctx, "apply", 0); err != nil {
			println(err.Error())
			os.Exit(3)
		}
		if _, err := b.LockInstance(ctx, "sandbox.held", "request", 0); err != nil {
			println(err.Error())
			os.Exit(3)
		}
		os.Stdout.WriteString("locked\n")
		time.Sleep(time.Hour)
	}
	os.Exit(m.Run())
}

// A lock dies with its holder: kill -9 of the process frees it at once,
// and the contention error named the holder's pid while it lived.
func TestLockDiesWithHolder(t *testing.T) {
	u := testenv.PostgresSchema(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PGSTATE_HOLD_URL="+u)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "locked" {
		t.Fatalf("helper: %q, %v", line, err)
	}
	db := pgstate.NewDB(u)
	t.Cleanup(db.Close)
	b := pgstate.Open(db, nil)
	t.Cleanup(func() { b.Close() })
	ctx := t.Context()
	for _, lock := range []func() (func() error, error){
		func() (func() error, error) { return b.Lock(ctx, "plan", 0) },
		func() (func() error, error) { return b.LockInstance(ctx, "sandbox.held", "request", 0) },
	} {
		_, err := lock()
		var le *state.LockedError
		if !errors.As(err, &le) || le.Holder.PID != cmd.Process.Pid {
			t.Fatalf("lock held by the helper (pid %d) = %v", cmd.Process.Pid, err)
		}
	}
	if err := cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	// The server notices the closed connection at once; allow it seconds.
	unlock, err := b.Lock(ctx, "plan", 10*time.Second)
	if err != nil {
		t.Fatalf("state lock after the holder died: %v", err)
	}
	defer unlock()
	u2, err := b.LockInstance(ctx, "sandbox.held", "request", 10*time.Second)
	if err != nil {
		t.Fatalf("instance lock after the holder died: %v", err)
	}
	defer u2()
}

// Neither the URL nor its password is ever in an error.
func TestErrorsHideTheURL(t *testing.T) {
	const pw = "pw-that-must-not-show-7c1a"
	for _, u := range []string{
		"postgres://someone:" + pw + "@127.0.0.1:1/db?sslmode=disable&connect_timeout=3",
		"postgres://someone:" + pw + "@127.0.0.1:notaport/db",
		"postgres://someone:" + pw + "@127.0.0.1:1/db?sslmode=bogus",
	} {
		b := pgstate.Open(pgstate.NewDB(u), nil)
		for _, err := range []error{
			func() error { _, err := b.Get(t.Context(), "sandbox.a"); return err }(),
			b.Put(t.Context(), statetest.Record(0, "url")),
			func() error { _, err := b.Lock(t.Context(), "apply", 0); return err }(),
		} {
			if err == nil {
				t.Fatalf("%s: no error", b.Describe())
			}
			if strings.Contains(err.Error(), pw) {
				t.Fatalf("error shows the password: %v", err)
			}
		}
		if strings.Contains(b.Describe(), pw) {
			t.Fatalf("Describe shows the password: %s", b.Describe())
		}
	}
}

// A wrong password says so, without it.
func TestWrongPassword(t *testing.T) {
	base := testenv.PostgresURL(t)
	i := strings.Index(base, "@")
	j := strings.Index(base[:i], "://")
	userEnd := strings.Index(base[j+3:i], ":")
	if userEnd < 0 {
		t.Skip("the test server URL has no password")
	}
	const pw = "definitely-wrong-3e9d"
	u := base[:j+3+userEnd+1] + pw + base[i:]
	b := pgstate.Open(pgstate.NewDB(u), nil)
	_, err := b.Snapshot(t.Context())
	if err == nil || !strings.Contains(err.Error(), "the password is wrong") || strings.Contains(err.Error(), pw) {
		t.Fatalf("Snapshot with a wrong password = %v", err)
	}
}

// A lost lock connection (the server restarted, or an admin ended it)
// takes its locks with it; the Backend makes a new one for new locks, and
// the old holder's unlock does not release them.
func TestLockConnectionLost(t *testing.T) {
	u := testenv.PostgresSchema(t)
	db := pgstate.NewDB(u)
	t.Cleanup(db.Close)
	b := pgstate.Open(db, nil)
	t.Cleanup(func() { b.Close() })
	ctx := t.Context()
	oldUnlock, err := b.LockInstance(ctx, "sandbox.x", "request", 0)
	if err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	// End the session holding that lock (and only it: the server is
	// shared with other tests). The key is lockKey's: SHA-256 of the
	// schema and address, split by pg_locks into two 32-bit halves.
	var schema string
	if err := c.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte("sandboxer state lock\x00" + schema + "\x00sandbox.x"))
	key := binary.BigEndian.Uint64(sum[:8])
	tag, err := c.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_locks
		WHERE locktype = 'advisory' AND objsubid = 1 AND classid = $1 AND objid = $2`, int64(key>>32), int64(uint32(key)))
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("terminate the lock's session: %v rows, %v", tag.RowsAffected(), err)
	}
	other := pgstate.Open(db, nil)
	t.Cleanup(func() { other.Close() })
	var newUnlock func() error
	deadline := time.Now().Add(10 * time.Second)
	for {
		// The server ends the session; a new value can take the lock.
		if newUnlock, err = other.LockInstance(ctx, "sandbox.x", "request", 0); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lock of a terminated session is still held: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The first value notices at its next lock call and reconnects.
	var again func() error
	for {
		again, err = b.LockInstance(ctx, "sandbox.y", "request", 0)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no new lock after the connection was lost: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := oldUnlock(); err != nil {
		t.Fatalf("unlock of a lock lost with its connection: %v", err)
	}
	if _, err := b.LockInstance(ctx, "sandbox.x", "apply", 0); err == nil {
		t.Fatal("took sandbox.x while another value holds it")
	}
	if err := errors.Join(again(), newUnlock()); err != nil {
		t.Fatal(err)
	}
}
