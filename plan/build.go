package plan

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
)

// Observation is what refresh saw of one cached instance.
type Observation struct {
	Alive bool
	// Detail says why an instance is not alive, for people.
	Detail string
}

// Observed holds refresh results by address. An address missing from it
// was not checked (refresh off) and counts as alive.
type Observed map[string]Observation

// Options shape a plan beyond configuration and state.
type Options struct {
	Now time.Time
	// Targets limits the plan to these instances; a block address (no key)
	// targets every instance of the block. Empty means everything.
	Targets []config.Address
	// Replace forces replacement of these instances.
	Replace []config.Address
	// Destroy plans the removal of every (targeted) instance in state.
	Destroy bool
	// CarryData asks every replace of a live instance to carry its data
	// (request --carry-data), as carry_data = true does per sandbox.
	CarryData bool
}

// Build diffs desired instances against state and observations. It is pure:
// the same inputs always give the same plan.
func Build(cfg *config.Config, snap *state.Snapshot, obs Observed, opts Options) (*Plan, error) {
	p := &Plan{Lineage: snap.Lineage, Serial: snap.Serial, Destroy: opts.Destroy}
	var moved map[string]string
	if !opts.Destroy {
		// Decide on the records where the moved blocks put them (moved.go);
		// a destroy plan deletes them where they are.
		var err error
		if snap, moved, err = applyMoves(cfg.Moves, snap); err != nil {
			return nil, err
		}
	}
	for _, a := range opts.Replace {
		if !slices.ContainsFunc(cfg.Instances, func(in *config.Instance) bool {
			return targeted(in.Addr.String(), []config.Address{a})
		}) {
			return nil, fmt.Errorf("--replace %s: no such sandbox instance in the configuration", a)
		}
	}
	for _, a := range opts.Targets {
		inConfig := slices.ContainsFunc(cfg.Instances, func(in *config.Instance) bool {
			return targeted(in.Addr.String(), []config.Address{a})
		})
		inState := false
		for addr := range snap.Records {
			inState = inState || targeted(addr, []config.Address{a})
		}
		if !inConfig && !inState {
			return nil, fmt.Errorf("--target %s: no such sandbox in the configuration or the state", a)
		}
	}
	desired := make(map[string]*config.Instance, len(cfg.Instances))
	for _, in := range cfg.Instances {
		desired[in.Addr.String()] = in
	}
	if opts.Destroy {
		for addr, rec := range snap.Records {
			if targeted(addr, opts.Targets) {
				p.Changes = append(p.Changes, deleteChange(rec, ReasonNone))
			}
		}
	} else {
		p.Changes = decideAll(cfg.Instances, desired, snap, obs, opts)
		for addr, rec := range snap.Records {
			if !targeted(addr, opts.Targets) {
				continue
			}
			if c := decideOrphan(cfg, desired, rec, opts.Now); c != nil {
				p.Changes = append(p.Changes, c)
			}
		}
	}
	for _, c := range p.Changes {
		c.PrevAddr = moved[c.Addr.String()]
	}
	sortChanges(p.Changes)
	if !opts.Destroy {
		p.Pools = pools(cfg, snap, opts.Now)
	}
	if cfg.Provider != nil {
		if err := ChooseImagesFor(p.Changes, cfg.ProviderFor); err != nil {
			return nil, err
		}
	}
	return p, nil
}

// decideAll is Decide for every declared instance (the one desired holds
// for its address), in the order of insts, on every core: each decision
// reads only its instance and record.
func decideAll(insts []*config.Instance, desired map[string]*config.Instance, snap *state.Snapshot, obs Observed, opts Options) []*Change {
	decided := make([]*Change, len(insts))
	inPieces(len(insts), func(lo, hi int) {
		for i := lo; i < hi; i++ {
			in := insts[i]
			addr := in.Addr.String()
			if desired[addr] != in || in.OnDemand || !targeted(addr, opts.Targets) {
				continue
			}
			decided[i] = Decide(in, snap.Records[addr], obs, opts)
		}
	})
	out := decided[:0]
	for _, c := range decided {
		if c != nil {
			out = append(out, c)
		}
	}
	return out
}

// sortChanges sorts by address, rendering each address once rather than
// twice per comparison (n log n strings for 1,000 changes).
func sortChanges(cs []*Change) {
	type keyed struct {
		key string
		c   *Change
	}
	ks := make([]keyed, len(cs))
	for i, c := range cs {
		ks[i] = keyed{c.Addr.String(), c}
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].key < ks[j].key })
	for i, k := range ks {
		cs[i] = k.c
	}
}

// Decide applies the cache rule (SPEC §3) to one instance. Build calls it
// for every declared instance, and the on-demand path (`sandboxer request`,
// the HTTP API) for one keyed instance at a time, so the rule is written
// once. rec is the cached record (nil when none); obs may say it is dead.
// Like Build it is pure.
func Decide(in *config.Instance, rec *state.Record, obs Observed, opts Options) *Change {
	c := &Change{Addr: in.Addr, Project: in.Project, Requested: in.Features, TTL: in.TTL, Database: in.Database,
		Seed: in.Seed, SeedDigest: in.Seed.Digest()}
	if rec == nil {
		c.Action, c.Reason = Create, ReasonNew
		c.After = desiredSandbox(in)
		return c
	}
	cached := recordSandbox(rec)
	c.PriorGeneration = rec.Generation
	if o, seen := obs[rec.Address]; seen && !o.Alive {
		// A dead instance is evicted: its replacement starts from the
		// configuration, not from what the dead one held.
		c.Action, c.Reason, c.Evict, c.Detail = Create, ReasonDead, true, o.Detail
		c.After = desiredSandbox(in)
		return c
	}
	c.Before = cached
	union := cached.Features.Union(in.Provision)
	replaceWith := func(r Reason) *Change {
		c.Action, c.Reason = CreateThenDelete, r
		c.After = &Sandbox{Services: union.Services(), Features: union,
			// Networks are what the configuration names, not a union
			// with the cache's: one dropped from it may be gone from the
			// engine, and joining it would fail every replacement.
			Networks: in.Networks,
			Exposure: exposure(in.Publish),
			Runtime:  runtimeField(in.Runtime)}
		// Data carried from an instance seeded differently would undo
		// the new seed, so a changed seed always starts afresh.
		c.CarryData = (in.CarryData || opts.CarryData) && rec.SeedDigest == c.SeedDigest
		if rec.SeedDigest != c.SeedDigest {
			c.PriorSeedDigest = rec.SeedDigest
		}
		return c
	}
	switch {
	case len(opts.Replace) > 0 && targeted(in.Addr.String(), opts.Replace):
		return replaceWith(ReasonReplaceByRequest)
	case Expired(rec, opts.Now):
		return replaceWith(ReasonExpired)
	}
	if cached.Runtime != runtimeField(in.Runtime) {
		return replaceWith(ReasonRuntimeChanged)
	}
	if missing := missingServices(cached.Services, in.Services); len(missing) > 0 {
		c.MissingServices = missing
		c.MissingFeatures = cached.Features.Missing(in.Features.Only(missing))
		return replaceWith(ReasonServiceSuperset)
	}
	if missing := cached.Features.Missing(in.Features); len(missing) > 0 {
		c.MissingFeatures = missing
		return replaceWith(ReasonFeatureSuperset)
	}
	// A provider that reports no database name gives nothing to compare.
	if pg, ok := rec.Credentials["postgres"]; ok && pg.Database != "" && pg.Database != in.DatabaseName() {
		c.PriorDatabase = pg.Database
		return replaceWith(ReasonDatabaseChanged)
	}
	if rec.SeedDigest != c.SeedDigest {
		return replaceWith(ReasonSeedChanged)
	}
	if missing := missingServices(cached.Networks, in.Networks); len(missing) > 0 {
		c.MissingNetworks = missing
		return replaceWith(ReasonNetworkSuperset)
	}
	if !sameExposure(cached.Exposure, exposure(in.Publish)) {
		return replaceWith(ReasonExposureChanged)
	}
	c.Action, c.Reason = NoOp, ReasonCachedSuperset
	c.After = cached
	return c
}

// decideOrphan plans a state record whose declared instance is gone or
// which is an on-demand instance (those are never planned by decide).
func decideOrphan(cfg *config.Config, desired map[string]*config.Instance, rec *state.Record, now time.Time) *Change {
	if in := desired[rec.Address]; in != nil && !in.OnDemand {
		return nil // decide handled it
	}
	addr, err := config.ParseAddress(rec.Address)
	if err != nil {
		addr = config.Address{Name: rec.Address}
	}
	if r := removedFor(cfg.Removes, addr); r != nil {
		c := deleteChange(rec, ReasonRemoved)
		if !r.Destroy {
			c.Action = Forget
		}
		return c
	}
	block, declared := cfg.Sandboxes[addr.Name]
	if !declared || !block.OnDemand || !addr.HasKey {
		return deleteChange(rec, ReasonNoConfig)
	}
	if Expired(rec, now) {
		return deleteChange(rec, ReasonExpired)
	}
	cached := recordSandbox(rec)
	c := &Change{Addr: addr, Project: rec.Project, Action: NoOp, Reason: ReasonCachedSuperset,
		Before: cached, After: cached, PriorGeneration: rec.Generation}
	if tmpl, ok := desired[addr.Block().String()]; ok {
		c.Requested = tmpl.Features // what the block asks of every instance
	}
	return c
}

func deleteChange(rec *state.Record, r Reason) *Change {
	addr, err := config.ParseAddress(rec.Address)
	if err != nil {
		addr = config.Address{Name: rec.Address}
	}
	return &Change{Addr: addr, Project: rec.Project, Action: Delete, Reason: r,
		Before: recordSandbox(rec), PriorGeneration: rec.Generation}
}

func recordSandbox(rec *state.Record) *Sandbox {
	fs := config.FeatureSet{}
	for _, svc := range rec.Services {
		fs[svc] = rec.Features[svc]
	}
	fs = fs.Normalize()
	return &Sandbox{Services: fs.Services(), Features: fs, Networks: rec.Reach.Networks, Exposure: recordExposure(rec.Reach),
		Runtime: runtimeField(rec.RuntimeOf())}
}

// Expired reports whether a record's TTL has run out at now.
func Expired(rec *state.Record, now time.Time) bool {
	return !rec.ExpiresAt.IsZero() && !now.Before(rec.ExpiresAt)
}

func missingServices(have, want []string) []string {
	var out []string
	for _, s := range want {
		if !slices.Contains(have, s) {
			out = append(out, s)
		}
	}
	return out
}

// targeted reports whether addr is selected by targets (all when empty).
func targeted(addr string, targets []config.Address) bool {
	if len(targets) == 0 {
		return true
	}
	a, err := config.ParseAddress(addr)
	if err != nil {
		return false
	}
	for _, t := range targets {
		if t == a || (!t.HasKey && t.Name == a.Name) {
			return true
		}
	}
	return false
}
