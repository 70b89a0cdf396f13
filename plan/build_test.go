package plan

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// inst builds a desired instance of project "p" that opts in postgres and
// redis, asking for the given services and features.
func inst(addr string, features config.FeatureSet, provision config.FeatureSet) *config.Instance {
	a, err := config.ParseAddress(addr)
	if err != nil {
		panic(err)
	}
	features = features.Normalize()
	if provision == nil {
		provision = config.FeatureSet{"postgres": {}, "redis": {}}.Union(features)
	}
	return &config.Instance{Addr: a, Project: "p", Services: features.Services(),
		Features: features, Provision: provision.Normalize()}
}

func rec(addr string, features config.FeatureSet) *state.Record {
	features = features.Normalize()
	return &state.Record{Address: addr, Project: "p", Services: features.Services(),
		Features: features, Generation: 3, CreatedAt: now.Add(-time.Hour)}
}

func cfgOf(instances ...*config.Instance) *config.Config {
	c := &config.Config{Sandboxes: map[string]*config.Sandbox{}}
	for _, in := range instances {
		c.Instances = append(c.Instances, in)
		c.Sandboxes[in.Addr.Name] = &config.Sandbox{Name: in.Addr.Name, Project: in.Project, OnDemand: in.OnDemand, ForEach: in.Addr.HasKey}
	}
	return c
}

func snapOf(records ...*state.Record) *state.Snapshot {
	s := &state.Snapshot{Lineage: "lin", Serial: 7, Records: map[string]*state.Record{}}
	for _, r := range records {
		s.Records[r.Address] = r
	}
	return s
}

// row is the part of a change the cache rule decides.
type row struct {
	Addr   string
	Action string
	Reason Reason
	After  config.FeatureSet
	Miss   config.FeatureSet
	MissS  []string
}

func rows(p *Plan) []row {
	var out []row
	for _, c := range p.Changes {
		r := row{Addr: c.Addr.String(), Action: c.Action.String(), Reason: c.Reason, MissS: c.MissingServices}
		if c.After != nil {
			r.After = c.After.Features
		}
		if len(c.MissingFeatures) > 0 {
			r.Miss = c.MissingFeatures
		}
		out = append(out, r)
	}
	return out
}

func TestCacheRule(t *testing.T) {
	pgVector := config.FeatureSet{"postgres": {"vector"}}
	both := config.FeatureSet{"postgres": {"pg_trgm", "vector"}, "redis": {}}
	tests := []struct {
		name string
		cfg  *config.Config
		snap *state.Snapshot
		obs  Observed
		opts Options
		want []row
	}{{
		name: "new instance gets the project's full opted set",
		cfg:  cfgOf(inst("sandbox.ci", pgVector, nil)),
		snap: snapOf(),
		want: []row{{Addr: "sandbox.ci", Action: "create", Reason: ReasonNew,
			After: config.FeatureSet{"postgres": {"vector"}, "redis": {}}}},
	}, {
		name: "equal sets reuse",
		cfg:  cfgOf(inst("sandbox.ci", both, nil)),
		snap: snapOf(rec("sandbox.ci", both)),
		want: []row{{Addr: "sandbox.ci", Action: "no-op", Reason: ReasonCachedSuperset, After: both}},
	}, {
		name: "cache holding more features and services reuses",
		cfg:  cfgOf(inst("sandbox.ci", pgVector, nil)),
		snap: snapOf(rec("sandbox.ci", both)),
		want: []row{{Addr: "sandbox.ci", Action: "no-op", Reason: ReasonCachedSuperset, After: both}},
	}, {
		name: "empty request reuses any cache",
		cfg:  cfgOf(inst("sandbox.ci", config.FeatureSet{}, config.FeatureSet{"postgres": {}})),
		snap: snapOf(rec("sandbox.ci", config.FeatureSet{"postgres": {}})),
		want: []row{{Addr: "sandbox.ci", Action: "no-op", Reason: ReasonCachedSuperset,
			After: config.FeatureSet{"postgres": {}}}},
	}, {
		name: "missing feature replaces with the union",
		cfg:  cfgOf(inst("sandbox.s", config.FeatureSet{"redis": {"search"}}, nil)),
		snap: snapOf(rec("sandbox.s", both)),
		want: []row{{Addr: "sandbox.s", Action: "replace", Reason: ReasonFeatureSuperset,
			After: config.FeatureSet{"postgres": {"pg_trgm", "vector"}, "redis": {"search"}},
			Miss:  config.FeatureSet{"redis": {"search"}}}},
	}, {
		name: "new service added to the project replaces",
		cfg:  cfgOf(inst("sandbox.s", config.FeatureSet{"postgres": {}, "redis": {}}, nil)),
		snap: snapOf(rec("sandbox.s", config.FeatureSet{"postgres": {}})),
		want: []row{{Addr: "sandbox.s", Action: "replace", Reason: ReasonServiceSuperset,
			After: config.FeatureSet{"postgres": {}, "redis": {}}, MissS: []string{"redis"}}},
	}, {
		name: "project shrinking keeps a covering cache",
		cfg: cfgOf(inst("sandbox.s", config.FeatureSet{"postgres": {}},
			config.FeatureSet{"postgres": {}})),
		snap: snapOf(rec("sandbox.s", both)),
		want: []row{{Addr: "sandbox.s", Action: "no-op", Reason: ReasonCachedSuperset, After: both}},
	}, {
		name: "dead instance is evicted and created from config",
		cfg:  cfgOf(inst("sandbox.ci", pgVector, nil)),
		snap: snapOf(rec("sandbox.ci", both)),
		obs:  Observed{"sandbox.ci": {Alive: false, Detail: "container gone"}},
		want: []row{{Addr: "sandbox.ci", Action: "create", Reason: ReasonDead,
			After: config.FeatureSet{"postgres": {"vector"}, "redis": {}}}},
	}, {
		name: "alive observation changes nothing",
		cfg:  cfgOf(inst("sandbox.ci", pgVector, nil)),
		snap: snapOf(rec("sandbox.ci", both)),
		obs:  Observed{"sandbox.ci": {Alive: true}},
		want: []row{{Addr: "sandbox.ci", Action: "no-op", Reason: ReasonCachedSuperset, After: both}},
	}, {
		name: "expired instance is replaced",
		cfg:  cfgOf(inst("sandbox.ci", pgVector, nil)),
		snap: snapOf(func() *state.Record { r := rec("sandbox.ci", both); r.ExpiresAt = now; return r }()),
		want: []row{{Addr: "sandbox.ci", Action: "replace", Reason: ReasonExpired, After: both}},
	}, {
		name: "unexpired instance is reused",
		cfg:  cfgOf(inst("sandbox.ci", pgVector, nil)),
		snap: snapOf(func() *state.Record { r := rec("sandbox.ci", both); r.ExpiresAt = now.Add(time.Second); return r }()),
		want: []row{{Addr: "sandbox.ci", Action: "no-op", Reason: ReasonCachedSuperset, After: both}},
	}, {
		name: "replace by request",
		cfg:  cfgOf(inst("sandbox.ci", pgVector, nil)),
		snap: snapOf(rec("sandbox.ci", both)),
		opts: Options{Replace: []config.Address{{Name: "ci"}}},
		want: []row{{Addr: "sandbox.ci", Action: "replace", Reason: ReasonReplaceByRequest, After: both}},
	}, {
		name: "instance gone from config is deleted",
		cfg:  cfgOf(),
		snap: snapOf(rec("sandbox.old", both)),
		want: []row{{Addr: "sandbox.old", Action: "delete", Reason: ReasonNoConfig}},
	}, {
		name: "for_each keys added and removed",
		cfg:  cfgOf(inst(`sandbox.m["a"]`, pgVector, nil), inst(`sandbox.m["c"]`, pgVector, nil)),
		snap: snapOf(rec(`sandbox.m["a"]`, both), rec(`sandbox.m["b"]`, both)),
		want: []row{
			{Addr: `sandbox.m["a"]`, Action: "no-op", Reason: ReasonCachedSuperset, After: both},
			{Addr: `sandbox.m["b"]`, Action: "delete", Reason: ReasonNoConfig},
			{Addr: `sandbox.m["c"]`, Action: "create", Reason: ReasonNew,
				After: config.FeatureSet{"postgres": {"vector"}, "redis": {}}},
		},
	}, {
		name: "target limits to one block",
		cfg:  cfgOf(inst("sandbox.a", pgVector, nil), inst("sandbox.b", pgVector, nil)),
		snap: snapOf(rec("sandbox.z", both)),
		opts: Options{Targets: []config.Address{{Name: "b"}}},
		want: []row{{Addr: "sandbox.b", Action: "create", Reason: ReasonNew,
			After: config.FeatureSet{"postgres": {"vector"}, "redis": {}}}},
	}, {
		name: "destroy deletes everything in state",
		cfg:  cfgOf(inst("sandbox.a", pgVector, nil)),
		snap: snapOf(rec("sandbox.a", both), rec("sandbox.z", both)),
		opts: Options{Destroy: true},
		want: []row{
			{Addr: "sandbox.a", Action: "delete", Reason: ReasonNone},
			{Addr: "sandbox.z", Action: "delete", Reason: ReasonNone},
		},
	}, {
		name: "on-demand template is not provisioned by plan",
		cfg: func() *config.Config {
			in := inst("sandbox.agent", pgVector, nil)
			in.OnDemand = true
			return cfgOf(in)
		}(),
		snap: snapOf(rec(`sandbox.agent["dev-7"]`, both),
			func() *state.Record {
				r := rec(`sandbox.agent["old"]`, both)
				r.ExpiresAt = now.Add(-time.Minute)
				return r
			}()),
		want: []row{
			{Addr: `sandbox.agent["dev-7"]`, Action: "no-op", Reason: ReasonCachedSuperset, After: both},
			{Addr: `sandbox.agent["old"]`, Action: "delete", Reason: ReasonExpired},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.Now = now
			p, err := Build(tt.cfg, tt.snap, tt.obs, opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, rows(p)); diff != "" {
				t.Errorf("plan mismatch (-want +got):\n%s", diff)
			}
			if p.Lineage != "lin" || p.Serial != 7 {
				t.Errorf("plan made against %s/%d, want lin/7", p.Lineage, p.Serial)
			}
		})
	}
}

func TestReplaceUnknownAddress(t *testing.T) {
	_, err := Build(cfgOf(), snapOf(), nil, Options{Replace: []config.Address{{Name: "nope"}}})
	if err == nil {
		t.Fatal("want an error for --replace of an undeclared instance")
	}
}

func TestTargetUnknownAddress(t *testing.T) {
	cfg := cfgOf(inst("sandbox.a", config.FeatureSet{"postgres": {}}, nil))
	snap := snapOf(rec("sandbox.old", config.FeatureSet{"postgres": {}}))
	for _, target := range []config.Address{{Name: "a"}, {Name: "old"}} {
		if _, err := Build(cfg, snap, nil, Options{Targets: []config.Address{target}}); err != nil {
			t.Errorf("--target %s: %v", target, err)
		}
	}
	if _, err := Build(cfg, snap, nil, Options{Targets: []config.Address{{Name: "zzz"}}}); err == nil {
		t.Error("want an error for --target of an instance neither declared nor recorded")
	}
}

func TestSummaryAndHasChanges(t *testing.T) {
	p := &Plan{Changes: []*Change{{Action: NoOp}, {Action: Create}, {Action: CreateThenDelete}, {Action: Delete}, {Action: NoOp}}}
	if diff := cmp.Diff(Summary{Create: 1, Replace: 1, Delete: 1, Reuse: 2}, p.Summary()); diff != "" {
		t.Error(diff)
	}
	if !p.HasChanges() {
		t.Error("HasChanges = false")
	}
	if (&Plan{Changes: []*Change{{Action: NoOp}}}).HasChanges() {
		t.Error("all-reuse plan reports changes")
	}
}
