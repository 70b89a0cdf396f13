package ondemand

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/events"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/state"
)

// Resource is one labelled engine resource (container, network, volume).
type Resource = apply.Resource

// Inventory lists and removes the labelled resources of one lineage
// (the provider capability).
type Inventory = apply.Inventory

// Reaper destroys expired instances and removes orphaned resources.
//
// Policy (SPEC §8 leaves it open; this is the decision):
//   - Expired on-demand instances are destroyed and their records removed.
//   - Expired declared instances are destroyed too (a ttl is a lifetime,
//     and nobody may run apply for days); the next plan shows them as
//     new. Declared instances belong to plan/apply, so reap changes them
//     only while it holds the whole-state lock, taken without waiting:
//     while a plan or apply runs, reap leaves them for its next round.
//   - An orphan is a resource labelled with this state's lineage that no
//     record owns: no record at its address, or a generation other than
//     the record's (a kill -9 between creating containers and recording
//     them; an old generation whose removal failed).
//   - A resource whose engine id some record's Resources name is never an
//     orphan, whatever address its labels carry: a claimed warm-pool
//     member keeps the labels of its pool address (see pool.go).
//   - An on-demand instance whose holders (leases, hold.go) are all
//     dead, one of them a release-on-end holder, is released: its last
//     holder died (kill -9, a cut release) before it could release it.
//     Dead leases are dropped.
//   - A record that cannot be read (invalid JSON, a newer schema) is
//     reported in ReapReport.Damaged and left alone, with the resources
//     labelled with its address: its ttl and generation are unknown. The
//     rest of the pass goes on, so ttl expiry keeps working for every
//     other sandbox.
//
// Safety while other commands run: every writer holds the instance lock
// from before it creates resources until after it has recorded them
// (request; apply's Executor too), so reap try-locks each address with
// timeout 0, skips it when busy, and re-reads the record under the lock
// before deciding that a resource is an orphan. A resource listed before
// the lock and recorded meanwhile then matches the record and is kept;
// one created after the listing is not in the list. No grace period is
// needed on top: the lock is exactly the "in flight" window, while a
// grace period would only guess at it (and leave crash leftovers for its
// length). Declared addresses additionally need the state lock, which
// covers an older Executor that does not take instance locks.
type Reaper struct {
	// Config tells which keyed addresses belong to on-demand blocks, for
	// orphans that have no record. Nil: only records say so.
	Config    *config.Config
	Store     Store
	Provider  apply.Provider // deletes expired instances
	Inventory Inventory      // nil: orphans are not looked for
	Events    events.Sink
	Now       func() time.Time
}

// Skip is an address reap left alone this time.
type Skip struct {
	Address string
	Why     string
}

// Damaged is an address whose state record cannot be read. Reap leaves it
// and its resources alone (it cannot tell its ttl or generation) until a
// user restores or forgets the record; Err says how.
type Damaged struct {
	Address string
	Err     error
}

// ReapReport says what one reap did.
type ReapReport struct {
	Expired []string   // addresses destroyed because their ttl ran out
	Unheld  []string   // released because every holder died (hold.go)
	Orphans []Resource // resources removed
	// Templates are the template data directories removed because no
	// image of the configuration uses them (apply.TemplateCollector).
	Templates []Resource
	Skipped   []Skip
	Damaged   []Damaged // sorted by address
	// Databases maps each database host's address to the per-test
	// databases dropped there (lease passed, test process gone). The
	// library's reap fills it (package databases does the work); Reaper
	// leaves it nil.
	Databases map[string][]string
}

// Reap runs one pass. Errors of single addresses are joined; the rest of
// the pass still runs.
func (r *Reaper) Reap(ctx context.Context) (*ReapReport, error) {
	rep := &ReapReport{}
	// Inspect, not Snapshot: one damaged record must not stop ttl expiry
	// for every other sandbox.
	snap, err := r.Store.Inspect(ctx)
	if err != nil {
		return rep, err
	}
	if snap.Lineage == "" {
		return rep, nil // no state: nothing was ever provisioned from it
	}
	for addr, derr := range snap.Damaged {
		rep.Damaged = append(rep.Damaged, Damaged{Address: addr, Err: derr})
	}
	sort.Slice(rep.Damaged, func(i, j int) bool { return rep.Damaged[i].Address < rep.Damaged[j].Address })
	now := r.now()
	work := map[string]*reapWork{}
	get := func(addr string) *reapWork {
		if work[addr] == nil {
			work[addr] = &reapWork{}
		}
		return work[addr]
	}
	for addr, rec := range snap.Records {
		if plan.Expired(rec, now) {
			get(addr).expired = true
		}
	}
	leases, err := r.Store.HeldBy(ctx, "")
	if err != nil {
		return rep, err
	}
	for _, l := range leases {
		if !l.Alive(now, state.Hostname()) {
			get(l.Address).deadHolders = true
		}
	}
	if r.Inventory != nil {
		res, err := r.Inventory.ListManaged(ctx, snap.Lineage)
		if err != nil {
			return rep, fmt.Errorf("list labelled resources: %w", err)
		}
		referenced := referencedIDs(snap.Records)
		for _, m := range res {
			if _, damaged := snap.Damaged[m.Address]; damaged {
				continue // its record may well own it: not an orphan
			}
			if referenced[m.ID] {
				continue // a claimed pool member's: its labels name the pool address
			}
			if labelOwned(snap.Records, m) {
				continue // a moved record's: its labels name its address before the move
			}
			if r.forgotten(m.Address) {
				continue // a removed block forgot it: no longer ours to remove
			}
			if rec := snap.Records[m.Address]; rec == nil || rec.Generation != m.Generation {
				w := get(m.Address)
				w.candidates = append(w.candidates, m)
			}
		}
	}
	addrs := make([]string, 0, len(work))
	needState := false
	for addr := range work {
		addrs = append(addrs, addr)
		if !r.onDemand(addr, snap.Records[addr]) {
			needState = true
		}
	}
	sort.Strings(addrs)

	stateHeld := false
	if needState {
		unlock, err := r.Store.Lock(ctx, "reap", 0)
		var le *state.LockedError
		switch {
		case errors.As(err, &le):
		case err != nil:
			return rep, err
		default:
			stateHeld = true
			defer unlock()
		}
	}
	var errs []error
	for _, addr := range addrs {
		if !r.onDemand(addr, snap.Records[addr]) && !stateHeld {
			rep.Skipped = append(rep.Skipped, Skip{addr, "a plan or apply holds the state lock"})
			continue
		}
		if err := r.reapOne(ctx, addr, work[addr].candidates, now, rep); err != nil {
			errs = append(errs, err)
		}
	}
	errs = append(errs, r.collectTemplates(ctx, rep))
	return rep, errors.Join(errs...)
}

// collectTemplates removes the provider's templates that no image of the
// configuration uses (none without a configuration: it cannot tell).
func (r *Reaper) collectTemplates(ctx context.Context, rep *ReapReport) error {
	tc, ok := apply.As[apply.TemplateCollector](r.Provider)
	if !ok || r.Config == nil {
		return nil
	}
	removed, err := tc.CollectTemplates(ctx, TemplateImages(r.Config))
	rep.Templates = append(rep.Templates, removed...)
	if err != nil {
		return fmt.Errorf("collect templates: %w", err)
	}
	return nil
}

// TemplateImages are the PostgreSQL image refs a configuration may run on
// any runtime: the configured ones, or, where none is, every default
// image (the plan picks one by the features).
func TemplateImages(cfg *config.Config) []string {
	var out []string
	for _, p := range []*config.Provider{cfg.Provider, cfg.Kubernetes} {
		if p == nil {
			continue
		}
		if img, ok := p.Images["postgres"]; ok && !img.Default {
			out = append(out, img.Ref)
			continue
		}
		for _, d := range config.DefaultImagesOf("postgres") {
			out = append(out, d.Ref)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

type reapWork struct {
	expired     bool
	deadHolders bool
	candidates  []Resource
}

// reapOne handles one address under its instance lock, taken without
// waiting.
func (r *Reaper) reapOne(ctx context.Context, addr string, candidates []Resource, now time.Time, rep *ReapReport) error {
	lockName := addr
	if lockName == "" {
		lockName = "(unlabelled)"
	}
	unlock, err := r.Store.LockInstance(ctx, lockName, "reap", 0)
	var le *state.LockedError
	if errors.As(err, &le) {
		rep.Skipped = append(rep.Skipped, Skip{addr, "another command is working on it"})
		return nil
	}
	if err != nil {
		return err
	}
	defer unlock()
	// Decide again from the record as it is now, under the lock.
	rec, err := r.Store.Get(ctx, addr)
	if err != nil {
		return err
	}
	unheld, err := r.dropDeadHolders(ctx, addr, now)
	if err != nil {
		return err
	}
	if rec != nil && rec.OnDemand && unheld && !plan.Expired(rec, now) {
		if err := r.Provider.Delete(ctx, rec); err != nil {
			r.emit(events.Failed, addr, rec.Generation, err.Error())
			return fmt.Errorf("release %s (its holders are gone): %w", addr, err)
		}
		if err := r.Store.Delete(ctx, addr); err != nil {
			return fmt.Errorf("release %s (its holders are gone): %w", addr, err)
		}
		rep.Unheld = append(rep.Unheld, addr)
		r.emit(events.Released, addr, rec.Generation, "holders gone")
		rec = nil
	}
	if rec != nil && plan.Expired(rec, now) {
		if err := r.Provider.Delete(ctx, rec); err != nil {
			r.emit(events.Failed, addr, rec.Generation, err.Error())
			return fmt.Errorf("reap expired %s: %w", addr, err)
		}
		if err := r.Store.Delete(ctx, addr); err != nil {
			return fmt.Errorf("reap expired %s: %w", addr, err)
		}
		rep.Expired = append(rep.Expired, addr)
		r.emit(events.Expired, addr, rec.Generation, "expired")
		rec = nil // its generation's leftovers, if any, are orphans now
	}
	var orphans []Resource
	for _, m := range candidates {
		if rec == nil || m.Generation != rec.Generation {
			orphans = append(orphans, m)
		}
	}
	if len(orphans) == 0 {
		return nil
	}
	// A pool claim may have moved the record that owns them between the
	// listing and this lock (it records the claimant before it lets go of
	// the member's lock, which this pass now holds): look again.
	snap, err := r.Store.Inspect(ctx)
	if err != nil {
		return err
	}
	referenced := referencedIDs(snap.Records)
	orphans = slices.DeleteFunc(orphans, func(m Resource) bool { return referenced[m.ID] || labelOwned(snap.Records, m) })
	if len(orphans) == 0 {
		return nil
	}
	if err := r.Inventory.DeleteManaged(ctx, orphans); err != nil {
		r.emit(events.Failed, addr, 0, err.Error())
		return fmt.Errorf("remove orphans of %s: %w", addr, err)
	}
	rep.Orphans = append(rep.Orphans, orphans...)
	gens := map[int]bool{}
	for _, m := range orphans {
		if !gens[m.Generation] {
			gens[m.Generation] = true
			r.emit(events.Reaped, addr, m.Generation, "orphan")
		}
	}
	return nil
}

// dropDeadHolders drops the dead leases on addr (under its instance
// lock); unheld says the instance is to be released: no live holder is
// left and a dead one was to release it at its end.
func (r *Reaper) dropDeadHolders(ctx context.Context, addr string, now time.Time) (unheld bool, err error) {
	leases, err := r.Store.HeldBy(ctx, addr)
	if err != nil || len(leases) == 0 {
		return false, err
	}
	live, dead := splitLeases(leases, now, state.Hostname())
	for _, l := range dead {
		unheld = unheld || l.Release
		if err := r.Store.Unhold(ctx, addr, l.Holder); err != nil {
			return false, err
		}
	}
	return unheld && len(live) == 0, nil
}

// referencedIDs are the engine ids some record's Resources name. A
// resource a record names is owned whatever its labels say: a claimed
// warm-pool member's containers keep the labels of the pool address they
// were made at (engine labels cannot change), while its record moved to
// the claimant's address.
// forgotten: the configuration has a removed block with lifecycle
// destroy = false for addr (its block or the instance), so the engine
// resources labelled with it were handed over, not orphaned.
func (r *Reaper) forgotten(addr string) bool {
	if r.Config == nil {
		return false
	}
	a, err := config.ParseAddress(addr)
	if err != nil {
		return false
	}
	for _, rm := range r.Config.Removes {
		if !rm.Destroy && (rm.From == a || !rm.From.HasKey && rm.From.Name == a.Name) {
			return true
		}
	}
	return false
}

// labelOwned: a record moved by a moved block (LabelAddress set) owns
// the resources labelled with its old address and its generation, which
// its Resources may not all name (an image's anonymous volume).
func labelOwned(recs map[string]*state.Record, m Resource) bool {
	for _, rec := range recs {
		if rec.LabelAddress != "" && rec.LabelAddress == m.Address && rec.Generation == m.Generation {
			return true
		}
	}
	return false
}

func referencedIDs(recs map[string]*state.Record) map[string]bool {
	out := map[string]bool{}
	for _, rec := range recs {
		if id := rec.Resources.Network; id != "" {
			out[id] = true
		}
		for _, id := range rec.Resources.Containers {
			out[id] = true
		}
		for _, v := range rec.Resources.Volumes {
			out[v] = true
		}
		// Kubernetes: every object of an instance is named like its pod
		// (and listed with that name as its ID); container names there are
		// the services' and say nothing.
		if pod := rec.Resources.Pod; pod != "" {
			out[pod] = true
		}
	}
	return out
}

// onDemand reports whether addr belongs to the on-demand path: its record
// says so, or (no record) it is keyed and its block is on_demand.
func (r *Reaper) onDemand(addr string, rec *state.Record) bool {
	if rec != nil {
		return rec.OnDemand
	}
	if strings.HasPrefix(addr, quotaLockPrefix) {
		return true // a tenant's reservations: dead ones are dropped under its quota lock
	}
	a, err := config.ParseAddress(addr)
	if err != nil || !a.HasKey || r.Config == nil {
		return false
	}
	sb, ok := r.Config.Sandboxes[a.Name]
	return ok && sb.OnDemand
}

func (r *Reaper) now() time.Time {
	if r.Now == nil {
		return time.Now().UTC()
	}
	return r.Now().UTC()
}

func (r *Reaper) emit(typ events.Type, addr string, gen int, reason string) {
	if r.Events == nil {
		return
	}
	ev := events.Event{Time: r.now(), Event: typ, Address: addr, Generation: gen, Reason: reason}
	if a, err := config.ParseAddress(addr); err == nil {
		ev.Key = a.Key
	}
	r.Events.Emit(ev)
}
