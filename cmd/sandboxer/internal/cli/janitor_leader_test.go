package cli

import (
	"bytes"
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/ondemand"
	"github.com/sandboxer/sandboxer/state"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Two janitors on one state: one leads, the other follows, and takes
// over once the leader stops (its janitor lock is released).
func TestJanitorOneLeaderTakesOver(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	ctx := context.Background()
	start := func(buf *syncBuffer) (stop func()) {
		store := state.Open(path)
		r := &ondemand.Reaper{Store: store}
		ch := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			runJanitor(ctx, ch, 10*time.Millisecond, r, nil, store, slog.New(slog.NewTextHandler(buf, nil)))
		}()
		return func() { close(ch); <-done }
	}
	waitFor := func(buf *syncBuffer, what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(buf.String(), what) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q in the log:\n%s", what, buf.String())
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	var a, b syncBuffer
	stopA := start(&a)
	waitFor(&a, "janitor: this replica leads")
	stopB := start(&b)
	defer stopB()
	waitFor(&b, "janitor: another replica leads")
	if strings.Contains(b.String(), "this replica leads") {
		t.Fatalf("both lead:\n%s", b.String())
	}
	stopA()
	waitFor(&b, "janitor: this replica leads")
}
