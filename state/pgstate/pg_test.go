package pgstate_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

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
