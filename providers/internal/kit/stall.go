package kit

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync/atomic"
	"time"
)

// ErrStalled is the cause of a stream's context cancelled by
// WatchProgress: no byte moved for the whole allowance. It wraps
// os.ErrDeadlineExceeded, so a runtime's retry treats it as a cut stream.
var ErrStalled = fmt.Errorf("the stream moved no bytes: %w", os.ErrDeadlineExceeded)

// WatchProgress bounds a stream by its progress, not by its length: the
// context it returns is cancelled with cause ErrStalled once nothing has
// been written through the returned writer for stall, however long the
// stream has run. A copy of any size is never cut while it moves; one
// whose other end stopped answering (a stalled exec, a kubelet that
// lost its pod) is cut and can be retried. Call stop when the stream is
// over. The clock is checked a tenth of stall at a time.
func WatchProgress(ctx context.Context, w io.Writer, stall time.Duration) (_ context.Context, _ io.Writer, stop func()) {
	sctx, cancel := context.WithCancelCause(ctx)
	pw := &progressWriter{w: w}
	pw.last.Store(time.Now().UnixNano())
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(max(stall/10, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-sctx.Done():
				return
			case now := <-t.C:
				if now.Sub(time.Unix(0, pw.last.Load())) >= stall {
					cancel(fmt.Errorf("%w for %s", ErrStalled, stall))
					return
				}
			}
		}
	}()
	return sctx, pw, func() { close(done); cancel(nil) }
}

// progressWriter notes when bytes last went through it.
type progressWriter struct {
	w    io.Writer
	last atomic.Int64 // UnixNano
}

func (p *progressWriter) Write(b []byte) (int, error) {
	n, err := p.w.Write(b)
	if n > 0 {
		p.last.Store(time.Now().UnixNano())
	}
	return n, err
}
