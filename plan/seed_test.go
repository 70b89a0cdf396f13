package plan

import (
	"testing"

	"github.com/sandboxer/sandboxer/config"
)

// A changed seed replaces a sandbox the cache otherwise covers (reason
// seed_changed); carry_data carries data on other replaces only, since
// data carried across a new seed would undo it.
func TestSeedChangedAndCarry(t *testing.T) {
	pg := config.FeatureSet{"postgres": {}}
	pgv := config.FeatureSet{"postgres": {"vector"}}
	seedA := &config.Seed{SQL: []config.SeedFile{{Path: "a.sql", SHA256: "aa"}}}
	seedB := &config.Seed{SQL: []config.SeedFile{{Path: "a.sql", SHA256: "bb"}}}
	tests := []struct {
		name          string
		want          config.FeatureSet
		seed, cached  *config.Seed
		carry, reqCar bool
		action        Action
		reason        Reason
		carried       bool
	}{
		{name: "same seed", want: pg, seed: seedA, cached: seedA, action: NoOp, reason: ReasonCachedSuperset},
		{name: "no seed either side", want: pg, action: NoOp, reason: ReasonCachedSuperset},
		{name: "seed content changed", want: pg, seed: seedB, cached: seedA, carry: true, action: CreateThenDelete, reason: ReasonSeedChanged},
		{name: "seed added", want: pg, seed: seedA, action: CreateThenDelete, reason: ReasonSeedChanged},
		{name: "seed removed", want: pg, cached: seedA, action: CreateThenDelete, reason: ReasonSeedChanged},
		{name: "feature superset carries", want: pgv, seed: seedA, cached: seedA, carry: true, action: CreateThenDelete, reason: ReasonFeatureSuperset, carried: true},
		{name: "carry asked by request", want: pgv, reqCar: true, action: CreateThenDelete, reason: ReasonFeatureSuperset, carried: true},
		{name: "not asked", want: pgv, action: CreateThenDelete, reason: ReasonFeatureSuperset},
		{name: "feature superset with a new seed does not carry", want: pgv, seed: seedB, cached: seedA, carry: true, action: CreateThenDelete, reason: ReasonFeatureSuperset},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := inst("sandbox.ci", tt.want, nil)
			in.Seed, in.CarryData = tt.seed, tt.carry
			r := rec("sandbox.ci", pg)
			r.SeedDigest = tt.cached.Digest()
			c := Decide(in, r, nil, Options{Now: now, CarryData: tt.reqCar})
			if c.Action != tt.action || c.Reason != tt.reason || c.CarryData != tt.carried {
				t.Errorf("got %s/%s carry %v, want %s/%s carry %v", c.Action, c.Reason, c.CarryData, tt.action, tt.reason, tt.carried)
			}
			if c.SeedDigest != tt.seed.Digest() {
				t.Errorf("seed digest %q, want %q", c.SeedDigest, tt.seed.Digest())
			}
		})
	}
	if seedA.Digest() == seedB.Digest() || seedA.Digest() == "" {
		t.Error("digests do not tell seeds apart")
	}
}
