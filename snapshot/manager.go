package snapshot

import (
	"context"
	"fmt"
	"time"

	"github.com/sandboxer/sandboxer/events"
	"github.com/sandboxer/sandboxer/state"
)

// Records is what the manager needs of the state store: records, and the
// per-instance lock that apply and the on-demand path also take, so a
// restore never overlaps a replace of the same instance.
type Records interface {
	Get(ctx context.Context, addr string) (*state.Record, error)
	LockInstance(ctx context.Context, addr, operation string, timeout time.Duration) (unlock func() error, err error)
}

// Manager runs snapshot, restore and reset for the CLI and the HTTP API:
// under the instance's lock, with an event for each.
type Manager struct {
	Records Records
	Engine  Engine
	Store   Store
	Events  events.Sink
	// LockTimeout bounds the wait for another command on the instance.
	LockTimeout time.Duration
	Now         func() time.Time
}

// Outcome is what a data operation did, for output and the API.
type Outcome struct {
	Address    string        `json:"address"`
	Generation int           `json:"generation"`
	Snapshot   string        `json:"snapshot"`
	Services   []string      `json:"services"`
	Size       int64         `json:"size"`
	Elapsed    time.Duration `json:"-"`
	ElapsedMS  int64         `json:"elapsed_ms"`
}

func (m *Manager) locked(ctx context.Context, addr, op string, fn func(rec *state.Record) (*Manifest, error)) (*Outcome, error) {
	unlock, err := m.Records.LockInstance(ctx, addr, op, m.LockTimeout)
	if err != nil {
		return nil, err
	}
	defer unlock()
	rec, err := m.Records.Get(ctx, addr)
	if err != nil {
		return nil, err
	}
	if rec == nil {
		return nil, fmt.Errorf("%s %w (see sandboxer state list)", addr, ErrNotProvisioned)
	}
	start := time.Now()
	man, err := fn(rec)
	if err != nil {
		m.emit(events.Event{Event: events.Failed, Address: addr, Generation: rec.Generation, Reason: op + ": " + err.Error()})
		return nil, err
	}
	el := time.Since(start)
	return &Outcome{Address: addr, Generation: rec.Generation, Snapshot: man.Name, Services: man.Services,
		Size: man.Size(), Elapsed: el, ElapsedMS: el.Milliseconds()}, nil
}

// Snapshot saves addr's data as name.
func (m *Manager) Snapshot(ctx context.Context, addr, name string) (*Outcome, error) {
	out, err := m.locked(ctx, addr, "snapshot", func(rec *state.Record) (*Manifest, error) {
		return Take(ctx, m.Engine, m.Store, rec, name, m.now())
	})
	if err == nil {
		m.emit(events.Event{Event: events.Snapshotted, Address: addr, Generation: out.Generation, Reason: name})
	}
	return out, err
}

// Restore loads snapshot name into addr.
func (m *Manager) Restore(ctx context.Context, addr, name string) (*Outcome, error) {
	out, err := m.locked(ctx, addr, "restore", func(rec *state.Record) (*Manifest, error) {
		return Restore(ctx, m.Engine, m.Store, rec, name)
	})
	if err == nil {
		m.emit(events.Event{Event: events.Restored, Address: addr, Generation: out.Generation, Reason: name})
	}
	return out, err
}

// Reset returns addr to snapshot name, or to the newest snapshot taken
// of it when name is empty. It is a restore that finds the data already
// prepared inside the instance when the snapshot was taken from it or
// loaded into it before.
func (m *Manager) Reset(ctx context.Context, addr, name string) (*Outcome, error) {
	if name == "" {
		latest, err := Latest(m.Store, addr)
		if err != nil {
			return nil, err
		}
		name = latest.Name
	}
	out, err := m.locked(ctx, addr, "reset", func(rec *state.Record) (*Manifest, error) {
		return Restore(ctx, m.Engine, m.Store, rec, name)
	})
	if err == nil {
		m.emit(events.Event{Event: events.Restored, Address: addr, Generation: out.Generation, Reason: "reset " + name})
	}
	return out, err
}

func (m *Manager) emit(e events.Event) {
	if m.Events == nil {
		return
	}
	e.Time = m.now()
	m.Events.Emit(e)
}

func (m *Manager) now() time.Time {
	if m.Now == nil {
		return time.Now().UTC()
	}
	return m.Now().UTC()
}
