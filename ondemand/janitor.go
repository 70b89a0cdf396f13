package ondemand

import (
	"context"
	"errors"
	"time"

	"github.com/sandboxer/sandboxer/state"
)

// JanitorLock is the instance lock the leading janitor holds: not a
// sandbox address (those start with "sandbox."), so no command contends
// for it.
const JanitorLock = "(serve janitor)"

// Janitor runs a reap pass every Every, on one process at a time of all
// those sharing a state (serve replicas, a Deployment's pods): the
// leader, which holds JanitorLock for as long as it runs. The others try
// the lock on every tick, so when the leader dies (its lock dies with it:
// a flock, a database session) another takes over within one interval.
// Run releases the lock when it returns: a replica that shuts down hands
// the janitor over at once.
//
// It is level-based: a pass decides from the state and the engine as
// they are, so a pass lost to a crash or a hand-off is simply the next
// one's work.
type Janitor struct {
	Store Store
	// Every is the interval between passes; it must be positive.
	Every time.Duration
	// Pass is one reap (the library's: instances, orphans and the
	// per-test databases).
	Pass func(ctx context.Context) (*ReapReport, error)
	// OnPass hears each pass this process made as the leader; nil
	// ignores them.
	OnPass func(*ReapReport, error)
	// OnRole hears when this process starts leading, first sees another
	// lead, or cannot try the lock (each time); nil ignores it.
	OnRole func(JanitorRole)
	// Interrupt, when it closes, ends Run after the pass in progress
	// (cancelling ctx abandons that pass too).
	Interrupt <-chan struct{}
}

// JanitorRole is what a janitor learned about the lead.
type JanitorRole struct {
	// Leads: this process took the janitor lock and reaps from now on.
	Leads bool
	// Holder is who leads when another does (zero when it did not say
	// yet).
	Holder state.LockInfo
	// Err: the lock could not be tried (the state backend failed); the
	// next tick tries again.
	Err error
}

// Run runs passes until ctx ends or Interrupt closes, then releases the
// janitor lock if it holds it.
func (j *Janitor) Run(ctx context.Context) {
	t := time.NewTicker(j.Every)
	defer t.Stop()
	var release func() error
	defer func() {
		if release != nil {
			_ = release()
		}
	}()
	follower := false
	for {
		select {
		case <-j.Interrupt:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if release == nil {
			unlock, err := j.Store.LockInstance(ctx, JanitorLock, "serve janitor", 0)
			var le *state.LockedError
			switch {
			case errors.As(err, &le):
				if !follower {
					follower = true
					j.role(JanitorRole{Holder: le.Holder})
				}
				continue
			case err != nil:
				j.role(JanitorRole{Err: err})
				continue
			}
			release = unlock
			j.role(JanitorRole{Leads: true})
		}
		rep, err := j.Pass(ctx)
		if j.OnPass != nil {
			j.OnPass(rep, err)
		}
	}
}

func (j *Janitor) role(r JanitorRole) {
	if j.OnRole != nil {
		j.OnRole(r)
	}
}
