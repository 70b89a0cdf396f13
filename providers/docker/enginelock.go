package docker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/volume"
)

// An engine lock is mutual exclusion across every process that drives one
// engine, wherever those processes run: a volume named after the lock,
// created with a random token. The engine creates volumes of one name under
// a lock of its own and answers a create of a name that exists with the
// volume already there, labels and all, so exactly one creator gets its own
// token back and holds the lock. Network names give no such guarantee: the
// engine's duplicate-name check is not atomic, and concurrent creates of one
// name can all succeed (every container start by that name then fails as
// ambiguous).
//
// A lock is held for one engine round trip or two (a list and a create),
// so a waiter polls. A holder that dies leaves its volume behind; a waiter
// that has seen the same token for lockStale takes the lock over, and the
// label sweeps (ListManaged) remove a lock older than that.

// LabelLock marks a lock volume; its value is the lock's purpose.
const LabelLock = "dev.sandboxer.lock"

const (
	labelLockToken = "dev.sandboxer.lock-token"
	lockPoll       = 20 * time.Millisecond
	// lockStale is far longer than a holder keeps a lock (a network list
	// and create, well under a second even on a loaded engine), and
	// longer than createTimeout, which bounds what a holder does.
	lockStale = 2 * createTimeout
)

// lineageLockName is the volume that locks one purpose of one lineage.
func lineageLockName(lineage, purpose string) string {
	return lineageNetworkName(lineage) + "-" + purpose + "-lock"
}

// lockLineage takes the engine lock on purpose for lineage, waiting while
// another process holds it, and returns the function that releases it.
func (p *Provider) lockLineage(ctx context.Context, lineage, purpose string) (unlock func(), err error) {
	return p.lockEngine(ctx, lineageLockName(lineage, purpose), map[string]string{
		LabelManaged: "true",
		LabelLineage: lineage,
		LabelLock:    purpose,
	}, lockPoll, lockStale)
}

// lockEngine takes the engine lock held by the volume name, labelled with
// labels (which must name the lock's purpose, LabelLock) and a token of
// its own, waiting while another process holds it and asking again every
// poll (a lock held for seconds, as a template build holds it, is asked
// for less often: every waiter's request is an engine call). A holder
// seen for stale is taken to be dead.
func (p *Provider) lockEngine(ctx context.Context, name string, base map[string]string, poll, stale time.Duration) (unlock func(), err error) {
	token, err := lockToken()
	if err != nil {
		return nil, err
	}
	labels := map[string]string{labelLockToken: token}
	for k, v := range base {
		labels[k] = v
	}
	var (
		seen      string // the other holder's token
		seenSince time.Time
	)
	for {
		v, err := p.cli.VolumeCreate(ctx, volume.CreateOptions{Name: name, Driver: "local", Labels: labels})
		if err != nil {
			return nil, p.engineErr("take lock "+name, err)
		}
		holder := v.Labels[labelLockToken]
		if holder == token {
			return func() {
				rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
				defer cancel()
				_ = p.releaseLock(rctx, name, token) // a leftover is taken over after lockStale
			}, nil
		}
		switch {
		case holder != seen:
			seen, seenSince = holder, time.Now()
		case time.Since(seenSince) > p.staleAfter(stale):
			// Its holder died with it. Of the waiters that saw it die,
			// one takes it over: the one whose token a second volume,
			// named after the dead token, comes back with. Others wait
			// on; removing by name without that gate, a late waiter
			// could remove the lock the first one had just taken.
			if err := p.takeOver(ctx, name, holder, labels); err != nil {
				return nil, err
			}
			seen = ""
			continue
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("wait for lock %s: %w", name, ctx.Err())
		case <-time.After(poll):
		}
	}
}

func (p *Provider) staleAfter(stale time.Duration) time.Duration {
	if p.lockStaleAfter > 0 {
		return p.lockStaleAfter
	}
	return stale
}

// takeOver removes the lock a dead holder left, if this waiter wins the
// gate for it; a waiter that loses returns and keeps waiting.
func (p *Provider) takeOver(ctx context.Context, name, deadToken string, labels map[string]string) error {
	gate := name + "-stale-" + deadToken[:min(12, len(deadToken))]
	v, err := p.cli.VolumeCreate(ctx, volume.CreateOptions{Name: gate, Driver: "local", Labels: labels})
	if err != nil {
		return p.engineErr("take over lock "+name, err)
	}
	if v.Labels[labelLockToken] != labels[labelLockToken] {
		return nil
	}
	err = p.releaseLock(ctx, name, deadToken)
	if rerr := p.cli.VolumeRemove(context.WithoutCancel(ctx), gate, true); rerr != nil && !cerrdefs.IsNotFound(rerr) && err == nil {
		err = p.engineErr("take over lock "+name, rerr)
	}
	return err
}

// releaseLock removes the lock volume if it still carries token.
func (p *Provider) releaseLock(ctx context.Context, name, token string) error {
	v, err := p.cli.VolumeInspect(ctx, name)
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return p.engineErr("inspect lock "+name, err)
	}
	if v.Labels[labelLockToken] != token {
		return nil
	}
	if err := p.cli.VolumeRemove(ctx, name, true); err != nil && !cerrdefs.IsNotFound(err) {
		return p.engineErr("release lock "+name, err)
	}
	return nil
}

// lockMayBeHeld reports whether a labelled volume is a lock young enough
// that a live process may hold it: sweeps leave those alone, so a reap
// running beside a network create cannot break the lock's exclusion.
func lockMayBeHeld(labels map[string]string, createdAt string, now time.Time) bool {
	stale := lockStale
	switch labels[LabelLock] {
	case "":
		return false
	case templateLockPurpose:
		stale = templateLockStale
	}
	t, err := time.Parse(time.RFC3339Nano, createdAt)
	return err == nil && now.Sub(t) <= stale
}

func lockToken() (string, error) {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("lock token: %w", err)
	}
	return hex.EncodeToString(b), nil
}
