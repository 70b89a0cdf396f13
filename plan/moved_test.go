package plan

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
)

func TestApplyMoves(t *testing.T) {
	addr := func(s string) config.Address {
		a, err := config.ParseAddress(s)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	move := func(from, to string) *config.Move { return &config.Move{From: addr(from), To: addr(to)} }
	rec := func(a string, gen int) *state.Record { return &state.Record{Address: a, Generation: gen} }
	cases := []struct {
		name  string
		recs  []*state.Record
		moves []*config.Move
		want  map[string]string // new → old
		err   string
	}{
		{name: "instance", recs: []*state.Record{rec("sandbox.a", 2)}, moves: []*config.Move{move("sandbox.a", "sandbox.b")},
			want: map[string]string{"sandbox.b": "sandbox.a"}},
		{name: "key", recs: []*state.Record{rec(`sandbox.m["x"]`, 1)}, moves: []*config.Move{move(`sandbox.m["x"]`, `sandbox.m["y"]`)},
			want: map[string]string{`sandbox.m["y"]`: `sandbox.m["x"]`}},
		{name: "block keeps keys", recs: []*state.Record{rec(`sandbox.m["x"]`, 1), rec(`sandbox.m["y"]`, 1), rec("sandbox.other", 1)},
			moves: []*config.Move{move("sandbox.m", "sandbox.n")},
			want:  map[string]string{`sandbox.n["x"]`: `sandbox.m["x"]`, `sandbox.n["y"]`: `sandbox.m["y"]`}},
		{name: "into for_each", recs: []*state.Record{rec("sandbox.a", 1)}, moves: []*config.Move{move("sandbox.a", `sandbox.m["k"]`)},
			want: map[string]string{`sandbox.m["k"]`: "sandbox.a"}},
		{name: "chain", recs: []*state.Record{rec("sandbox.a", 1)}, moves: []*config.Move{move("sandbox.a", "sandbox.b"), move("sandbox.b", "sandbox.c")},
			want: map[string]string{"sandbox.c": "sandbox.a"}},
		{name: "done before", recs: []*state.Record{rec("sandbox.b", 1)}, moves: []*config.Move{move("sandbox.a", "sandbox.b")},
			want: map[string]string{}},
		{name: "empty state", moves: []*config.Move{move("sandbox.a", "sandbox.b")}, want: map[string]string{}},
		{name: "to in use", recs: []*state.Record{rec("sandbox.a", 1), rec("sandbox.b", 4)}, moves: []*config.Move{move("sandbox.a", "sandbox.b")},
			err: "Move to an address in use; sandbox.b is already recorded in state (generation 4)"},
		{name: "from unrecorded", recs: []*state.Record{rec("sandbox.z", 1)}, moves: []*config.Move{move("sandbox.a", "sandbox.b")},
			err: "Move from an unrecorded sandbox; No sandbox is recorded at sandbox.a"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			snap := snapOf(tt.recs...)
			before := slices.Sorted(maps.Keys(snap.Records))
			got, prev, err := applyMoves(tt.moves, snap)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("error %v, want one containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if prev == nil {
				prev = map[string]string{}
			}
			if diff := cmp.Diff(tt.want, prev); diff != "" {
				t.Errorf("moves (-want +got):\n%s", diff)
			}
			for to, from := range prev {
				r := got.Records[to]
				if r == nil || r.Address != to || r.ResourceAddress() != from {
					t.Errorf("record at %s: %+v, want address %s labelled %s", to, r, to, from)
				}
				if _, still := got.Records[from]; still {
					t.Errorf("%s still recorded after its move", from)
				}
			}
			// The snapshot passed in is not changed.
			after := slices.Sorted(maps.Keys(snap.Records))
			if diff := cmp.Diff(before, after); diff != "" {
				t.Errorf("input snapshot changed (-before +after):\n%s", diff)
			}
			for _, r := range snap.Records {
				if r.LabelAddress != "" {
					t.Errorf("input record %s changed: label address %s", r.Address, r.LabelAddress)
				}
			}
		})
	}
}
