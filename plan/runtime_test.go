package plan

import (
	"testing"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
)

// A sandbox moved to another runtime is replaced there (new before old),
// and its plan says why; staying put is a reuse whatever the runtime.
func TestDecideRuntime(t *testing.T) {
	fs := config.FeatureSet{"postgres": {}}
	kubePub := config.KubernetesPublish(false)
	onKube := func(r *state.Record) *state.Record {
		r.Resources.Runtime = state.RuntimeKubernetes
		r.Reach = state.Reach{PublishAddress: kubePub.Address, AdvertiseHost: kubePub.AdvertiseHost}
		return r
	}
	instOn := func(rt string, pub config.Publish) *config.Instance {
		in := inst("sandbox.a", fs, nil)
		in.Runtime, in.Publish = rt, pub
		return in
	}
	tests := []struct {
		name        string
		in          *config.Instance
		rec         *state.Record
		wantAction  Action
		wantReason  Reason
		wantRuntime string // After.Runtime
	}{
		{"docker record (no runtime field), docker instance: reuse",
			instOn(config.RuntimeDocker, config.DefaultPublish()), rec("sandbox.a", fs), NoOp, ReasonCachedSuperset, ""},
		{"docker record, kubernetes instance: replace on kubernetes",
			instOn(config.RuntimeKubernetes, kubePub), rec("sandbox.a", fs), CreateThenDelete, ReasonRuntimeChanged, config.RuntimeKubernetes},
		{"kubernetes record, docker instance: replace on docker",
			instOn(config.RuntimeDocker, config.DefaultPublish()), onKube(rec("sandbox.a", fs)), CreateThenDelete, ReasonRuntimeChanged, ""},
		{"kubernetes record, kubernetes instance: reuse",
			instOn(config.RuntimeKubernetes, kubePub), onKube(rec("sandbox.a", fs)), NoOp, ReasonCachedSuperset, config.RuntimeKubernetes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Decide(tt.in, tt.rec, nil, Options{Now: now})
			if c.Action != tt.wantAction || c.Reason != tt.wantReason {
				t.Fatalf("got %v/%s, want %v/%s", c.Action, c.Reason, tt.wantAction, tt.wantReason)
			}
			if c.After.Runtime != tt.wantRuntime {
				t.Errorf("after runtime %q, want %q", c.After.Runtime, tt.wantRuntime)
			}
		})
	}
	// A first provision goes where the instance says.
	if c := Decide(instOn(config.RuntimeKubernetes, kubePub), nil, nil, Options{Now: now}); c.After.Runtime != config.RuntimeKubernetes {
		t.Errorf("create on %q, want kubernetes", c.After.Runtime)
	}
}

// Images are chosen from the provider block of each change's runtime, and
// the images to check carry it.
func TestChooseImagesPerRuntime(t *testing.T) {
	dockerProv := &config.Provider{Images: map[string]config.Image{"postgres": {Ref: "postgres:17"}}}
	kubeProv := &config.Provider{Images: map[string]config.Image{"postgres": {Ref: "sandboxer.local/postgres:17"}}}
	pick := func(rt string) *config.Provider {
		if rt == config.RuntimeKubernetes {
			return kubeProv
		}
		return dockerProv
	}
	changes := []*Change{
		{Addr: config.Address{Name: "d"}, Action: Create, After: &Sandbox{Features: config.FeatureSet{"postgres": {}}}},
		{Addr: config.Address{Name: "k"}, Action: Create, After: &Sandbox{Features: config.FeatureSet{"postgres": {}}, Runtime: config.RuntimeKubernetes}},
	}
	if err := ChooseImagesFor(changes, pick); err != nil {
		t.Fatal(err)
	}
	if changes[0].After.Images["postgres"] != "postgres:17" || changes[1].After.Images["postgres"] != "sandboxer.local/postgres:17" {
		t.Errorf("images %v / %v", changes[0].After.Images, changes[1].After.Images)
	}
	uses := ImagesToStart(changes)
	want := []ImageUse{{"postgres", "postgres:17", ""}, {"postgres", "sandboxer.local/postgres:17", config.RuntimeKubernetes}}
	if len(uses) != 2 || uses[0] != want[0] || uses[1] != want[1] {
		t.Errorf("uses %v, want %v", uses, want)
	}
}
