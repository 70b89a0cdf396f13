package kit

import (
	"context"
	"errors"
	"io"
	"os"
	"testing"
	"time"
)

func TestWatchProgress(t *testing.T) {
	const stall = 600 * time.Millisecond

	t.Run("a stream that moves is never cut", func(t *testing.T) {
		ctx, w, stop := WatchProgress(context.Background(), io.Discard, stall)
		defer stop()
		// Twice the allowance in all, a byte every quarter of it.
		for range 8 {
			time.Sleep(stall / 4)
			if _, err := w.Write([]byte{1}); err != nil {
				t.Fatal(err)
			}
		}
		if err := ctx.Err(); err != nil {
			t.Fatalf("cut while moving: %v (%v)", err, context.Cause(ctx))
		}
	})

	t.Run("a stream that stops is cut as a deadline", func(t *testing.T) {
		ctx, w, stop := WatchProgress(context.Background(), io.Discard, stall)
		defer stop()
		w.Write([]byte("some"))
		select {
		case <-ctx.Done():
		case <-time.After(20 * stall):
			t.Fatal("a stalled stream was not cut")
		}
		cause := context.Cause(ctx)
		if !errors.Is(cause, ErrStalled) || !errors.Is(cause, os.ErrDeadlineExceeded) {
			t.Fatalf("cause %v, want ErrStalled (a deadline, so a retry sees a cut)", cause)
		}
	})

	t.Run("the caller's cancel is the caller's", func(t *testing.T) {
		parent, cancel := context.WithCancel(context.Background())
		ctx, _, stop := WatchProgress(parent, io.Discard, time.Hour)
		defer stop()
		cancel()
		<-ctx.Done()
		if errors.Is(context.Cause(ctx), ErrStalled) {
			t.Fatal("a cancel by the caller reads as a stall")
		}
	})
}
