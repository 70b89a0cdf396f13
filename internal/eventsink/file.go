package eventsink

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/sandboxer/sandboxer/events"
)

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
func (w *File) Emit(e events.Event) {
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
