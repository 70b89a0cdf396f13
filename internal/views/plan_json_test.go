package views

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
)

// encoded is the reference: encoding/json's indented encoding of the
// JSONPlan, which PlanJSON must reproduce byte for byte.
func encoded(t *testing.T, p *plan.Plan) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(NewJSONPlan(p, "0.1.0")); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func written(t *testing.T, p *plan.Plan) string {
	t.Helper()
	var b bytes.Buffer
	if err := PlanJSON(&b, p, "0.1.0"); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestPlanJSONMatchesEncodingJSON(t *testing.T) {
	exposure := &config.Publish{Address: "0.0.0.0", AdvertiseHost: "db.example <&>", TLS: true}
	cases := map[string]*plan.Plan{
		"empty":    {},
		"pools":    {Pools: []plan.PoolSummary{{Address: "sandbox.agent", Size: 4, Ready: 2}, {Address: "sandbox.<b>", Size: 1}}},
		"no pools": {Pools: []plan.PoolSummary{}},
		"every shape": {Changes: []*plan.Change{
			{Addr: config.Address{Name: "a"}, Project: "p", Action: plan.Create, Reason: plan.ReasonNew, TTL: 4 * time.Hour,
				After: &plan.Sandbox{Services: []string{"postgres", "redis"}, Features: config.FeatureSet{"postgres": {"vector"}, "redis": {}}}},
			{Addr: config.Address{Name: "m", Key: "k\"<é>\u2028\x01", HasKey: true}, Action: plan.CreateThenDelete, Reason: plan.ReasonFeatureSuperset, CarryData: true,
				Before: &plan.Sandbox{Services: []string{}, Features: config.FeatureSet{}},
				After: &plan.Sandbox{Services: nil, Features: nil, Networks: []string{"n1", "n&2"}, Exposure: exposure,
					Images: map[string]string{"redis": "redis:8", "postgres": "pgvector/pgvector:pg17", "<x>": "a\"b"}, Runtime: "kubernetes",
					Generations: map[string]map[string]string{"redis": {"search": "2", "<j>": "1\""}, "valkey": {}}}},
			{Addr: config.Address{Name: "d"}, Project: "p", Action: plan.Delete, Reason: plan.ReasonNone,
				Before: &plan.Sandbox{Services: []string{"redis"}, Features: config.FeatureSet{"redis": nil, "b": {"x"}, "a": {"y", "z"}}, Exposure: &config.Publish{},
					Images: map[string]string{}}},
			{Addr: config.Address{Name: "r"}, Project: "p\\q", Action: plan.NoOp, Reason: plan.ReasonCachedSuperset,
				Before: &plan.Sandbox{Services: []string{"postgres"}, Networks: []string{}},
				After:  &plan.Sandbox{Services: []string{"postgres"}, Features: config.FeatureSet{"postgres": {"pg_trgm", "vector"}}}},
			{Addr: config.Address{Name: "x", Key: "", HasKey: true}, Action: plan.Action(99), Reason: plan.ReasonDead},
		}},
	}
	for name, p := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(encoded(t, p), written(t, p)); diff != "" {
				t.Errorf("PlanJSON differs from encoding/json (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPlanJSONRandom compares random plans built from awkward strings.
func TestPlanJSONRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	words := []string{"", "a", "postgres", "pg_trgm", "x y", "ä", "<", ">", "&", "\"", "\\", "\n", "\t", "\x00", "\x7f", "\u2029", "\xff", "😀"}
	word := func() string { return words[r.IntN(len(words))] + words[r.IntN(len(words))] }
	list := func() []string {
		switch r.IntN(4) {
		case 0:
			return nil
		case 1:
			return []string{}
		}
		l := make([]string, 1+r.IntN(3))
		for i := range l {
			l[i] = word()
		}
		return l
	}
	shape := func() *plan.Sandbox {
		if r.IntN(4) == 0 {
			return nil
		}
		sb := &plan.Sandbox{Services: list(), Networks: list()}
		if n := r.IntN(4); n > 0 {
			sb.Features = config.FeatureSet{}
			for range n - 1 {
				sb.Features[word()] = list()
			}
		}
		if r.IntN(5) == 0 {
			sb.Exposure = &config.Publish{Address: word(), AdvertiseHost: word(), TLS: r.IntN(2) == 0}
		}
		switch r.IntN(3) {
		case 0:
			sb.Images = map[string]string{}
		case 1:
			sb.Images = map[string]string{word(): word(), word(): word()}
		}
		if r.IntN(3) == 0 {
			sb.Generations = map[string]map[string]string{word(): {word(): word()}}
		}
		return sb
	}
	change := func() *plan.Change {
		return &plan.Change{
			Addr:    config.Address{Name: word(), Key: word(), HasKey: r.IntN(2) == 0},
			Project: word(), Action: plan.Action(r.IntN(5)), Reason: plan.Reason(word()),
			CarryData: r.IntN(3) == 0, Before: shape(), After: shape(), PrevAddr: []string{"", "", word()}[r.IntN(3)],
			TTL: time.Duration(r.IntN(3)) * 90 * time.Minute,
		}
	}
	// Plans large enough to be rendered in pieces on every core, of
	// sizes that split evenly and not.
	for _, n := range []int{minRenderPieces, minRenderPieces + 1, 3*minRenderPieces + 7} {
		p := &plan.Plan{}
		for range n {
			p.Changes = append(p.Changes, change())
		}
		if diff := cmp.Diff(encoded(t, p), written(t, p)); diff != "" {
			t.Fatalf("plan of %d changes: PlanJSON differs from encoding/json (-want +got):\n%s", n, diff)
		}
	}
	for i := range 300 {
		p := &plan.Plan{}
		if r.IntN(3) == 0 {
			p.Pools = []plan.PoolSummary{{Address: word(), Size: r.IntN(64), Ready: r.IntN(64)}}
		}
		if r.IntN(3) == 0 {
			p.Checks = []plan.CheckResult{{Name: word(), Status: "pass"}, {Name: word(), Status: "fail", Problems: []string{word(), "a \"quoted\" <message>"}}}
		}
		for range r.IntN(4) {
			p.Changes = append(p.Changes, change())
		}
		if diff := cmp.Diff(encoded(t, p), written(t, p)); diff != "" {
			t.Fatalf("plan %d: PlanJSON differs from encoding/json (-want +got):\n%s", i, diff)
		}
	}
}

// failingWriter fails every write.
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, fmt.Errorf("disk full") }

func TestPlanJSONWriteError(t *testing.T) {
	p := &plan.Plan{Changes: []*plan.Change{{Addr: config.Address{Name: "a"}, Action: plan.Create, Reason: plan.ReasonNew}}}
	if err := PlanJSON(failingWriter{}, p, "0.1.0"); err == nil {
		t.Fatal("PlanJSON to a failing writer returned no error")
	}
}

// TestPlanJSONKnowsEveryField fails when a field is added to what the JSON
// plan encodes: plan_json_write.go writes each field by hand and must
// learn the new one (then add it to the cases above and here).
func TestPlanJSONKnowsEveryField(t *testing.T) {
	known := map[string][]string{
		"JSONPlan":       {"FormatVersion", "SandboxerVersion", "ResourceChanges", "PlannedValues", "PriorState", "Configuration", "Checks", "Summary", "Pools", "Errored"},
		"JSONChange":     {"Address", "PreviousAddress", "Mode", "Type", "Name", "Index", "ProviderName", "Project", "Change", "ActionReason", "DataCarried"},
		"JSONChangeSet":  {"Actions", "Before", "After", "AfterUnknown", "BeforeSensitive", "AfterSensitive"},
		"JSONAttributes": {"Sandbox", "TTLSeconds"},
		"JSONResource":   {"Address", "Mode", "Type", "Name", "Index", "ProviderName", "SchemaVersion", "Values", "SensitiveValues"},
		"JSONPriorState": {"FormatVersion", "Values"},
		"Sandbox":        {"Services", "Features", "Networks", "Exposure", "Images", "Generations", "Runtime"},
		"Summary":        {"Create", "Replace", "Delete", "Reuse", "Forget"}, // Forget is json:"-"
	}
	for _, v := range []any{JSONPlan{}, JSONChange{}, JSONChangeSet{}, JSONAttributes{}, JSONResource{}, JSONPriorState{}, plan.Sandbox{}, plan.Summary{}} {
		ty := reflect.TypeOf(v)
		var fields []string
		for i := range ty.NumField() {
			fields = append(fields, ty.Field(i).Name)
		}
		if diff := cmp.Diff(known[ty.Name()], fields); diff != "" {
			t.Errorf("%s has other fields than plan_json_write.go writes (-known +now):\n%s", ty.Name(), diff)
		}
	}
}
