package sandboxer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sandboxer/sandboxer/ondemand"
)

// ReapReport says what one Reap did: the sandboxes destroyed (ttl passed)
// or released (every holder gone), the orphaned resources and unused
// templates removed, what was skipped or could not be read, and the
// per-test databases dropped.
type (
	ReapReport = ondemand.ReapReport
	// ReapSkip is an address a pass left alone this time (busy).
	ReapSkip = ondemand.Skip
	// DamagedRecord is an address whose state record cannot be read; a
	// pass leaves it and its resources alone.
	DamagedRecord = ondemand.Damaged
)

// Reap runs one pass over this state: it destroys every sandbox past its
// ttl (declared ones only while no plan or apply holds the state lock),
// releases on-demand instances whose holders all died, removes resources
// labelled with this state's lineage that no record owns, and drops the
// per-test databases whose lease passed or whose test process is gone.
// It never waits for a lock and skips what another command works on.
//
// One call, not two: everything that reaps (`sandboxer reap`, the
// janitor) wants both halves, and the databases come second so that a
// host destroyed as expired is not connected to first. A failure of one
// half does not stop the other; their errors are joined.
func (s *Sandboxer) Reap(ctx context.Context) (*ReapReport, error) {
	rep, err := s.reaper().Reap(ctx)
	if rep == nil {
		rep = &ReapReport{}
	}
	dropped, derr := s.reapDatabases(ctx)
	if len(dropped) > 0 {
		rep.Databases = dropped
	}
	return rep, classify(errors.Join(err, derr))
}

// DefaultReapEvery is the janitor's interval unless told otherwise
// (serve's --reap-interval default).
const DefaultReapEvery = time.Minute

// JanitorOptions configure RunJanitor.
type JanitorOptions struct {
	// Every is the interval between passes; default DefaultReapEvery.
	Every time.Duration
	// OnPass hears each pass this process made (as the leader): its
	// report (never nil) and error, classified. nil ignores them.
	OnPass func(*ReapReport, error)
	// OnRole hears when this process starts leading, first sees another
	// lead, or cannot try the janitor lock. nil ignores it.
	OnRole func(JanitorRole)
	// Interrupt, when it closes, ends RunJanitor after the pass in
	// progress (cancel the context to abandon that too).
	Interrupt <-chan struct{}
}

// JanitorRole is what a janitor learned about the lead: it leads, or
// another (Holder) does, or the lock could not be tried (Err).
type JanitorRole = ondemand.JanitorRole

// RunJanitor runs Reap every interval until ctx ends or o.Interrupt
// closes, on one process at a time of all those sharing the state: the
// one holding the janitor lock (an instance lock of the state backend on
// an address no sandbox has). The others try it on every tick, so when
// the leader dies another takes over within one interval; RunJanitor
// releases the lock when it returns, so a replica that stops hands over
// at once. serve runs it; so can any program embedding the library.
func (s *Sandboxer) RunJanitor(ctx context.Context, o JanitorOptions) error {
	every := o.Every
	switch {
	case every < 0:
		return &Error{Code: CodeInvalid, Message: fmt.Sprintf("janitor interval %s: must not be negative", every)}
	case every == 0:
		every = DefaultReapEvery
	}
	j := &ondemand.Janitor{Store: s.store, Every: every, Interrupt: o.Interrupt, OnRole: o.OnRole,
		Pass: s.Reap, OnPass: o.OnPass}
	j.Run(ctx)
	return nil
}
