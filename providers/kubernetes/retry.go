package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/sandboxer/sandboxer/apply"
)

// An exec stream runs over one long-lived connection to the API server,
// which the kubelet relays from the container. Under load either end, or
// anything between, may cut it: the reader then sees the stream end early
// (an unexpected EOF in a tar, a reset connection, a WebSocket closed
// without its status) or the command is killed (exit 137 or 143). Steps
// that can run again with the same result (reading an image's files,
// writing files, dumping, replacing a database from a dump) run again, up
// to execAttempts times in all; a step that still fails says so and is
// transient (apply.ErrTransient: unavailable, worth a retry). A step that
// cannot safely run twice (a seed file's SQL) is not retried: its cut is
// reported the same way, and the create that ran it rolls back.
const execAttempts = 4

// execRetryPause is the pause before the second attempt; it grows by as
// much before each later one.
const execRetryPause = 250 * time.Millisecond

// isCutStream reports whether err is an exec stream that ended early
// rather than a command that failed on its own.
func isCutStream(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrDeadlineExceeded) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{
		"unexpected EOF",
		"connection reset by peer",
		"broken pipe",
		"use of closed network connection",
		"websocket: close",
		"http2: stream closed",
		"stream error",
		"exited with code 137",
		"exited with code 143",
		"error reading from error stream",
		"error writing to stdin",
	} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// cutError is an idempotent step whose stream was cut on every attempt.
type cutError struct {
	what     string
	pod      string
	attempts int
	err      error
}

func (e *cutError) Error() string {
	return fmt.Sprintf("%s in pod %s: the exec stream was cut %d times in a row (last: %v); "+
		"the API server or the node is overloaded, or something between drops long-lived connections: "+
		"nothing was left behind, try again", e.what, e.pod, e.attempts, e.err)
}

func (e *cutError) Unwrap() []error { return []error{apply.ErrTransient, e.err} }

// retryCut runs step, an idempotent exec step (what) in pod, again while
// its stream is cut, at most execAttempts times in all.
func retryCut(ctx context.Context, what, pod string, step func() error) error {
	var err error
	for i := 1; ; i++ {
		err = step()
		if err == nil || !isCutStream(err) || ctx.Err() != nil {
			return err
		}
		if i == execAttempts {
			return &cutError{what: what, pod: pod, attempts: i, err: err}
		}
		t := time.NewTimer(time.Duration(i) * execRetryPause)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// transientCut marks a cut stream of a step that is not retried.
func transientCut(what, pod string, err error) error {
	if !isCutStream(err) {
		return err
	}
	return &cutError{what: what, pod: pod, attempts: 1, err: err}
}

// rewinder is a writer a retried dump can start over: a file.
type rewinder interface {
	io.Writer
	io.Seeker
	Truncate(size int64) error
}

// rewindable returns how to put w back to where it stands now, or nil
// when it cannot be (then a dump is not retried).
func rewindable(w io.Writer) func() error {
	f, ok := w.(rewinder)
	if !ok {
		return nil
	}
	at, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		return nil
	}
	return func() error {
		if err := f.Truncate(at); err != nil {
			return err
		}
		_, err := f.Seek(at, io.SeekStart)
		return err
	}
}
