package plan

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"testing"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
)

// manyInstances is n instances, enough to be split over the cores,
// declared out of address order; some are cached as they are, some
// cached smaller (replaced), and with refused set every seventh asks for
// two packaged extensions no default image holds together.
func manyInstances(n int, refused bool) (*config.Config, *state.Snapshot) {
	var insts []*config.Instance
	snap := snapOf(rec("sandbox.orphan", config.FeatureSet{"redis": {}}))
	for i := range n {
		addr := fmt.Sprintf("sandbox.s%05d", (i*7919)%n)
		fs := config.FeatureSet{"postgres": {"pg_trgm"}, "redis": {}}
		switch {
		case refused && i%7 == 0:
			fs = config.FeatureSet{"postgres": {"vector", "postgis"}}
		case i%5 == 0:
			snap.Records[addr] = rec(addr, config.FeatureSet{"postgres": {}})
		case i%3 == 0:
			snap.Records[addr] = rec(addr, fs)
		}
		insts = append(insts, inst(addr, fs, nil))
	}
	cfg := cfgOf(insts...)
	cfg.Provider = defaultProvider()
	return cfg, snap
}

// oneLoop is Build written as one loop over everything, the reference
// the pieces must reproduce.
func oneLoop(cfg *config.Config, snap *state.Snapshot) ([]*Change, []ImageRefusal) {
	desired := map[string]*config.Instance{}
	var cs []*Change
	for _, in := range cfg.Instances {
		desired[in.Addr.String()] = in
		cs = append(cs, Decide(in, snap.Records[in.Addr.String()], nil, Options{Now: now}))
	}
	for _, r := range snap.Records {
		if c := decideOrphan(cfg, desired, r, now); c != nil {
			cs = append(cs, c)
		}
	}
	sortChanges(cs)
	refusals, err := chooseImages(cs, cfg.ProviderFor)
	if err != nil {
		panic(err)
	}
	sort.SliceStable(refusals, func(i, j int) bool { return refusals[i].Addr.String() < refusals[j].Addr.String() })
	return cs, refusals
}

func TestBuildInPiecesIsOneLoop(t *testing.T) {
	n := 3 * minParallel
	cfg, snap := manyInstances(n, false)
	p, err := Build(cfg, snap, nil, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	want, _ := oneLoop(manyInstances(n, false))
	if len(p.Changes) != n+1 || !reflect.DeepEqual(p.Changes, want) {
		t.Fatalf("Build in pieces differs from one loop (%d changes, want %d)", len(p.Changes), len(want))
	}
	cfg, snap = manyInstances(n, true)
	_, err = Build(cfg, snap, nil, Options{Now: now})
	var ne *NoImageError
	if !errors.As(err, &ne) {
		t.Fatalf("Build with refused instances: %v", err)
	}
	_, wantRefusals := oneLoop(manyInstances(n, true))
	if len(wantRefusals) < n/8 || !reflect.DeepEqual(ne.Refusals, wantRefusals) {
		t.Fatalf("%d refusals, one loop has %d, or they differ", len(ne.Refusals), len(wantRefusals))
	}
}

// A plan with nothing to do still chooses images (of nothing).
func TestBuildOfNothing(t *testing.T) {
	cfg := cfgOf()
	cfg.Provider = defaultProvider()
	p, err := Build(cfg, snapOf(), nil, Options{Now: now})
	if err != nil || len(p.Changes) != 0 {
		t.Fatalf("Build of nothing: %v, %d changes", err, len(p.Changes))
	}
	if err := ChooseImagesFor(nil, cfg.ProviderFor); err != nil {
		t.Fatal(err)
	}
}
