package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// Type names a lifecycle transition.
type Type string

// The transitions an on-demand sandbox goes through.
const (
	Provisioned Type = "provisioned" // a new instance (first request, or a dead one healed)
	Reused      Type = "reused"      // a cache hit, probed alive
	Replaced    Type = "replaced"    // re-provisioned with a superset, credentials rotated
	Released    Type = "released"    // given back by its user
	Extended    Type = "extended"    // its TTL pushed out
	Expired     Type = "expired"     // destroyed by reap after its TTL ran out
	Reaped      Type = "reaped"      // orphaned resources removed by reap
	Failed      Type = "failed"      // a request, release or reap step failed
	Snapshotted Type = "snapshotted" // its data saved as a snapshot (Reason: the name)
	Restored    Type = "restored"    // its data replaced from a snapshot (Reason: the name, or "reset NAME")
)

// Event is one transition. It never holds credentials.
type Event struct {
	Time       time.Time `json:"time"`
	Event      Type      `json:"event"`
	Address    string    `json:"address"`
	Key        string    `json:"key,omitempty"`
	Generation int       `json:"generation,omitempty"`
	// Reason says why: the plan reason (new, dead, feature_superset, …),
	// "orphan", or a failure's message (providers scrub secrets from it).
	Reason string `json:"reason,omitempty"`
}

// Sink receives events. Emit must not block for long and must be safe for
// concurrent use.
type Sink interface {
	Emit(Event)
}

// Discard drops every event.
type Discard struct{}

// Emit does nothing.
func (Discard) Emit(Event) {}

// Multi sends every event to each of its sinks, in order.
type Multi []Sink

// Emit forwards e.
func (m Multi) Emit(e Event) {
	for _, s := range m {
		s.Emit(e)
	}
}

// File appends events as JSON lines to one file. Each event is a single
// write(2) on a file opened with O_APPEND, so lines from several processes
// (a CLI request next to `serve`) never interleave mid-line.
type File struct {
	mu     sync.Mutex
	f      *os.File
	errors int
	last   error
}

// OpenFile opens (creating, mode 0600) the events file at path for appending.
func OpenFile(path string) (*File, error) {
	if path == "" {
		return nil, errors.New("events file: empty path")
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open events file: %w", err)
	}
	return &File{f: f}, nil
}

// Emit appends e as one line. A failed write is counted, not returned:
// the transition already happened, and losing its record must not fail it.
func (w *File) Emit(e Event) {
	line, err := json.Marshal(e)
	if err != nil {
		w.fail(err)
		return
	}
	line = append(line, '\n')
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := w.f.Write(line); err != nil {
		w.errors++
		w.last = err
	}
}

func (w *File) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errors++
	w.last = err
}

// Errors reports how many events could not be written, and the last error.
func (w *File) Errors() (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.errors, w.last
}

// Close closes the file.
func (w *File) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.f.Close()
}
