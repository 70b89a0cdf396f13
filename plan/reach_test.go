package plan

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
)

// The cache rule covers reach: the cache must have joined every network
// asked for and be exposed as configured; more networks are fine.
func TestDecideReach(t *testing.T) {
	tlsPub := config.Publish{Address: "0.0.0.0", AdvertiseHost: "db.lan", TLS: true}
	withReach := func(r *state.Record, reach state.Reach) *state.Record {
		r.Reach = reach
		return r
	}
	withNet := func(in *config.Instance, nets []string, pub config.Publish) *config.Instance {
		in.Networks, in.Publish = nets, pub
		return in
	}
	fs := config.FeatureSet{"postgres": {}}
	tests := []struct {
		name        string
		in          *config.Instance
		rec         *state.Record
		wantAction  Action
		wantReason  Reason
		wantMissing []string
		wantAfter   *Sandbox
	}{
		{
			name:       "v1 record (no reach) and default config: reuse",
			in:         withNet(inst("sandbox.a", fs, nil), nil, config.DefaultPublish()),
			rec:        rec("sandbox.a", config.FeatureSet{"postgres": {}, "redis": {}}),
			wantAction: NoOp, wantReason: ReasonCachedSuperset,
		},
		{
			name: "cache joined more networks: reuse",
			in:   withNet(inst("sandbox.a", fs, nil), []string{"agents"}, config.DefaultPublish()),
			rec: withReach(rec("sandbox.a", config.FeatureSet{"postgres": {}, "redis": {}}),
				state.Reach{Networks: []string{"agents", "ci"}, PublishAddress: "127.0.0.1", AdvertiseHost: "127.0.0.1"}),
			wantAction: NoOp, wantReason: ReasonCachedSuperset,
		},
		{
			name: "a network the cache lacks: replace, joining what the configuration names",
			in:   withNet(inst("sandbox.a", fs, nil), []string{"agents", "ci"}, config.DefaultPublish()),
			rec: withReach(rec("sandbox.a", config.FeatureSet{"postgres": {}, "redis": {}}),
				state.Reach{Networks: []string{"agents", "old"}}),
			wantAction: CreateThenDelete, wantReason: ReasonNetworkSuperset, wantMissing: []string{"ci"},
			wantAfter: &Sandbox{Services: []string{"postgres", "redis"}, Features: config.FeatureSet{"postgres": {}, "redis": {}},
				Networks: []string{"agents", "ci"}},
		},
		{
			name:       "exposure differs: replace with the configured one",
			in:         withNet(inst("sandbox.a", fs, nil), nil, tlsPub),
			rec:        rec("sandbox.a", config.FeatureSet{"postgres": {}, "redis": {}}),
			wantAction: CreateThenDelete, wantReason: ReasonExposureChanged,
			wantAfter: &Sandbox{Services: []string{"postgres", "redis"}, Features: config.FeatureSet{"postgres": {}, "redis": {}},
				Exposure: &tlsPub},
		},
		{
			name: "same exposure: reuse",
			in:   withNet(inst("sandbox.a", fs, nil), nil, tlsPub),
			rec: withReach(rec("sandbox.a", config.FeatureSet{"postgres": {}, "redis": {}}),
				state.Reach{PublishAddress: "0.0.0.0", AdvertiseHost: "db.lan", TLS: true}),
			wantAction: NoOp, wantReason: ReasonCachedSuperset,
		},
		{
			name:       "new: networks and exposure from the configuration",
			in:         withNet(inst("sandbox.a", fs, nil), []string{"agents"}, tlsPub),
			wantAction: Create, wantReason: ReasonNew,
			wantAfter: &Sandbox{Services: []string{"postgres", "redis"}, Features: config.FeatureSet{"postgres": {}, "redis": {}},
				Networks: []string{"agents"}, Exposure: &tlsPub},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Decide(tt.in, tt.rec, nil, Options{Now: now})
			if c.Action != tt.wantAction || c.Reason != tt.wantReason {
				t.Fatalf("got %v/%s, want %v/%s", c.Action, c.Reason, tt.wantAction, tt.wantReason)
			}
			if diff := cmp.Diff(tt.wantMissing, c.MissingNetworks); diff != "" {
				t.Errorf("missing networks (-want +got):\n%s", diff)
			}
			if tt.wantAfter != nil {
				if diff := cmp.Diff(tt.wantAfter, c.After); diff != "" {
					t.Errorf("after (-want +got):\n%s", diff)
				}
				// What apply records is what the plan said.
				r := c.After.Reach()
				if r.TLS != c.After.Publish().TLS || r.PublishAddress != c.After.Publish().Address {
					t.Errorf("Reach() = %+v disagrees with Publish() = %+v", r, c.After.Publish())
				}
			}
		})
	}
}
