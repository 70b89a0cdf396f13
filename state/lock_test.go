package state

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestLockContention(t *testing.T) {
	tests := []struct {
		name    string
		lock    func(s *Store, op string) (func() error, error)
		addr    string
		message string // regexp for LockedError.Error()
	}{
		{
			name:    "state",
			lock:    func(s *Store, op string) (func() error, error) { return s.Lock(context.Background(), op, 0) },
			message: `^state is locked by pid \d+ on host \S+ \(operation "apply", since \d{4}-\d\d-\d\dT\S+Z, \d+s ago\)$`,
		},
		{
			name: "instance",
			lock: func(s *Store, op string) (func() error, error) {
				return s.LockInstance(context.Background(), `sandbox.app["a b"]`, op, 0)
			},
			addr:    `sandbox.app["a b"]`,
			message: `^instance sandbox.app\["a b"\] is locked by pid \d+ on host \S+ \(operation "apply", since .*, \d+s ago\)$`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := statePath(t)
			start := time.Now().Add(-time.Second)
			unlock, err := tt.lock(Open(path), "apply")
			if err != nil {
				t.Fatal(err)
			}
			// flock is per open file description: a second Store in the
			// same process contends like another process would.
			_, err = tt.lock(Open(path), "plan")
			var le *LockedError
			if !errors.As(err, &le) {
				t.Fatalf("second lock: err = %v, want a *LockedError", err)
			}
			h := le.Holder
			if h.PID != os.Getpid() || h.Host != hostname() || h.Who == "" || h.Operation != "apply" ||
				!uuidRE.MatchString(h.ID) || h.Path != path || h.Address != tt.addr || le.Address != tt.addr ||
				h.Since.Before(start) || h.Since.After(time.Now()) {
				t.Errorf("holder = %+v", h)
			}
			if !regexp.MustCompile(tt.message).MatchString(err.Error()) {
				t.Errorf("message %q does not match %s", err, tt.message)
			}

			if err := unlock(); err != nil {
				t.Fatal(err)
			}
			if err := unlock(); err != nil {
				t.Errorf("second unlock: %v", err)
			}
			if data, err := os.ReadFile(le.Path); err != nil || len(data) != 0 {
				t.Errorf("lock file after unlock: %q, %v; want it empty", data, err)
			}
			unlock2, err := tt.lock(Open(path), "plan")
			if err != nil {
				t.Fatalf("lock after release: %v", err)
			}
			unlock2()
		})
	}
}

func TestLockWaits(t *testing.T) {
	tests := []struct {
		name      string
		releaseIn time.Duration // 0: never
		timeout   time.Duration
		cancelIn  time.Duration // 0: never
		wantErr   error         // besides *LockedError
		wantOK    bool
	}{
		{name: "holder releases mid-wait", releaseIn: 200 * time.Millisecond, timeout: 5 * time.Second, wantOK: true},
		{name: "timeout", timeout: 200 * time.Millisecond},
		{name: "context canceled", timeout: 5 * time.Second, cancelIn: 100 * time.Millisecond, wantErr: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := statePath(t)
			unlock, err := Open(path).Lock(context.Background(), "apply", 0)
			if err != nil {
				t.Fatal(err)
			}
			defer unlock()
			if tt.releaseIn > 0 {
				time.AfterFunc(tt.releaseIn, func() { unlock() })
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancelIn > 0 {
				time.AfterFunc(tt.cancelIn, cancel)
			}

			start := time.Now()
			unlock2, err := Open(path).Lock(ctx, "plan", tt.timeout)
			elapsed := time.Since(start)
			if tt.wantOK {
				if err != nil {
					t.Fatalf("err = %v after %s", err, elapsed)
				}
				unlock2()
				if elapsed < tt.releaseIn-20*time.Millisecond || elapsed > tt.releaseIn+time.Second {
					t.Errorf("got the lock after %s, holder released after %s", elapsed, tt.releaseIn)
				}
				return
			}
			var le *LockedError
			if !errors.As(err, &le) || le.Holder.Operation != "apply" {
				t.Fatalf("err = %v, want a *LockedError naming the holder", err)
			}
			if tt.wantErr != nil && !errors.Is(err, tt.wantErr) {
				t.Errorf("err = %v, want it to wrap %v", err, tt.wantErr)
			}
			wait := tt.timeout
			if tt.cancelIn > 0 {
				wait = tt.cancelIn
			}
			if elapsed < wait-20*time.Millisecond || elapsed > wait+time.Second {
				t.Errorf("gave up after %s, want about %s", elapsed, wait)
			}
		})
	}
}

func TestLocksIndependent(t *testing.T) {
	ctx := context.Background()
	path := statePath(t)
	s := Open(path)
	type lockReq struct {
		addr     string // "" = the state lock
		wantBusy bool
	}
	steps := []lockReq{
		{addr: ""},
		{addr: "sandbox.a"},
		{addr: "sandbox.b"},
		{addr: "sandbox.a", wantBusy: true},
		{addr: "sandbox.b", wantBusy: true},
		{addr: "", wantBusy: true},
		{addr: "sandbox.c"},
	}
	for _, st := range steps {
		var unlock func() error
		var err error
		if st.addr == "" {
			unlock, err = s.Lock(ctx, "apply", 0)
		} else {
			unlock, err = s.LockInstance(ctx, st.addr, "apply", 0)
		}
		var le *LockedError
		if busy := errors.As(err, &le); busy != st.wantBusy || (err != nil && !busy) {
			t.Fatalf("lock %q: err = %v, want busy=%v", st.addr, err, st.wantBusy)
		}
		if le != nil && (le.Address != st.addr || le.Holder.Address != st.addr) {
			t.Errorf("lock %q: contention reported for %q (holder %q)", st.addr, le.Address, le.Holder.Address)
		}
		if unlock != nil {
			t.Cleanup(func() { unlock() })
		}
	}
}

func TestLockCreatesFolderNotState(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "new")
	path := filepath.Join(dir, "sandboxer.state")
	unlock, err := Open(path).Lock(ctx, "plan", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	if m := mode(t, dir); m != 0o700 {
		t.Errorf("folder mode = %o, want 700", m)
	}
	if got := listDir(t, dir); len(got) != 1 || got[0] != "sandboxer.state.lock" {
		t.Errorf("files: %v, want only the lock file", got)
	}
}

const lockHelperEnv = "SANDBOXER_STATE_TEST_LOCK_HOLDER"

// TestLockHelperProcess is not a test: it is the child process of
// TestCrashedHolderDoesNotWedge. It takes the state lock and an instance
// lock, says so, and waits to be killed.
func TestLockHelperProcess(t *testing.T) {
	path := os.Getenv(lockHelperEnv)
	if path == "" {
		return
	}
	s := Open(path)
	if _, err := s.Lock(context.Background(), "apply", 0); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	if _, err := s.LockInstance(context.Background(), "sandbox.a", "apply", 0); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("locked")
	time.Sleep(time.Minute)
	os.Exit(2)
}

func TestCrashedHolderDoesNotWedge(t *testing.T) {
	ctx := context.Background()
	path := statePath(t)
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHelperProcess$")
	cmd.Env = append(os.Environ(), lockHelperEnv+"="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	if strings.TrimSpace(line) != "locked" {
		t.Fatalf("child said %q, %v", line, err)
	}

	s := Open(path)
	locks := map[string]func() (func() error, error){
		"state":    func() (func() error, error) { return s.Lock(ctx, "plan", 0) },
		"instance": func() (func() error, error) { return s.LockInstance(ctx, "sandbox.a", "plan", 0) },
	}
	for name, lock := range locks {
		_, err := lock()
		var le *LockedError
		if !errors.As(err, &le) || le.Holder.PID != cmd.Process.Pid {
			t.Fatalf("%s lock while the child holds it: err = %v, want a *LockedError naming pid %d", name, err, cmd.Process.Pid)
		}
	}

	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no deferred unlock runs
		t.Fatal(err)
	}
	cmd.Wait()
	for name, lock := range locks {
		start := time.Now()
		unlock, err := lock()
		if err != nil {
			t.Fatalf("%s lock after the holder died: %v", name, err)
		}
		if d := time.Since(start); d > 100*time.Millisecond {
			t.Errorf("%s lock took %s", name, d)
		}
		unlock()
	}
}
