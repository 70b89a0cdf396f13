package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/events"
)

var t0 = time.Date(2026, 1, 2, 10, 0, 0, 0, time.UTC)

// fakeLib lists acme's and beta's instances to the operator, and (when
// leaky) to a tenant too: the dashboard must still show a tenant only
// its own.
type fakeLib struct {
	leaky bool
	fail  error
}

func (f fakeLib) Sandboxes(ctx context.Context) (*api.SandboxList, error) {
	if f.fail != nil {
		return nil, f.fail
	}
	exp := t0.Add(10 * time.Minute)
	all := []api.Instance{
		{Address: `sandbox.agent["acme.a"]`, Owner: "acme", Runtime: "docker", CreatedAt: t0, ExpiresAt: &exp},
		{Address: `sandbox.agent["beta.b"]`, Owner: "beta", Runtime: "kubernetes", CreatedAt: t0},
	}
	t := sandboxer.TenantOf(ctx)
	if t == nil || f.leaky {
		return &api.SandboxList{Sandboxes: all, Damaged: []api.DamagedRecord{{Address: "x", Error: "bad"}}}, nil
	}
	var out []api.Instance
	for _, in := range all {
		if in.Owner == t.Name {
			out = append(out, in)
		}
	}
	return &api.SandboxList{Sandboxes: out}, nil
}

func (fakeLib) Pools() []string { return []string{"sandbox.pooled"} }

func (fakeLib) PoolStatus(ctx context.Context, address string) (*api.PoolStatus, error) {
	return &api.PoolStatus{Address: address, Size: 3, Ready: 2, Members: []string{`sandbox.pooled["pool-1"]`}}, nil
}

func recorded() *Recorder {
	r := NewRecorder()
	for i, e := range []events.Event{
		{Event: events.Provisioned, Address: `sandbox.agent["acme.a"]`, Owner: "acme", ElapsedMS: 4000},
		{Event: events.Provisioned, Address: `sandbox.agent["beta.b"]`, Owner: "beta", ElapsedMS: 6000},
		{Event: events.PoolClaimed, Address: `sandbox.agent["acme.c"]`, Owner: "acme", ElapsedMS: 80},
		{Event: events.PoolFilled, Address: `sandbox.pooled["pool-1"]`},
		{Event: events.Reused, Address: `sandbox.agent["acme.a"]`, Owner: "acme", ElapsedMS: 5},
		{Event: events.Released, Address: `sandbox.agent["acme.a"]`, Owner: "acme"},
	} {
		e.Time = t0.Add(time.Duration(i) * 20 * time.Second)
		r.Emit(e)
	}
	return r
}

func build(t *testing.T, lib Library, tenant string) *Feed {
	t.Helper()
	d := New(lib, recorded())
	d.now = func() time.Time { return t0.Add(5 * time.Minute) }
	ctx := context.Background()
	if tenant != "" {
		ctx = sandboxer.WithTenant(ctx, &sandboxer.Tenant{Name: tenant})
	}
	f, err := d.Build(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func addresses[T any](xs []T, addr func(T) string) []string {
	out := []string{}
	for _, x := range xs {
		out = append(out, addr(x))
	}
	return out
}

// The operator sees every instance, the pools and every event; a tenant
// only its own instances and events, no pools and no damaged records,
// even from a library that lists more.
func TestFeedViews(t *testing.T) {
	inst := func(in api.Instance) string { return in.Address }
	ev := func(e events.Event) string { return string(e.Event) + " " + e.Address }

	op := build(t, fakeLib{}, "")
	if !op.Viewer.Operator || len(op.Pools) != 1 || op.Pools[0] != (Pool{Address: "sandbox.pooled", Size: 3, Ready: 2}) || len(op.Damaged) != 1 {
		t.Errorf("operator's feed: viewer %+v, pools %+v, damaged %+v", op.Viewer, op.Pools, op.Damaged)
	}
	if diff := cmp.Diff([]string{`sandbox.agent["acme.a"]`, `sandbox.agent["beta.b"]`}, addresses(op.Instances, inst)); diff != "" {
		t.Errorf("operator's instances (-want +got):\n%s", diff)
	}
	if len(op.Events) != 6 || op.Events[0].Event != events.Released {
		t.Errorf("operator's events, newest first: %v", addresses(op.Events, ev))
	}
	if op.Latency.ColdStart.Count != 2 || op.Latency.Claim.Count != 1 {
		t.Errorf("operator's latency: %+v", op.Latency)
	}

	for _, lib := range []fakeLib{{}, {leaky: true}} {
		acme := build(t, lib, "acme")
		if acme.Viewer != (Viewer{Tenant: "acme"}) || acme.Pools != nil || acme.Damaged != nil {
			t.Errorf("acme's feed (leaky %v): viewer %+v, pools %+v, damaged %+v", lib.leaky, acme.Viewer, acme.Pools, acme.Damaged)
		}
		if diff := cmp.Diff([]string{`sandbox.agent["acme.a"]`}, addresses(acme.Instances, inst)); diff != "" {
			t.Errorf("acme's instances (leaky %v) (-want +got):\n%s", lib.leaky, diff)
		}
		want := []string{`released sandbox.agent["acme.a"]`, `reused sandbox.agent["acme.a"]`,
			`pool_claimed sandbox.agent["acme.c"]`, `provisioned sandbox.agent["acme.a"]`}
		if diff := cmp.Diff(want, addresses(acme.Events, ev)); diff != "" {
			t.Errorf("acme's events (-want +got):\n%s", diff)
		}
		if acme.Latency.ColdStart.Count != 1 || acme.Latency.ColdStart.Max != 4000 || acme.Latency.Claim.Count != 1 {
			t.Errorf("acme's latency: %+v", acme.Latency)
		}
		b, _ := json.Marshal(acme)
		if strings.Contains(string(b), "beta") || strings.Contains(string(b), "pooled") {
			t.Errorf("acme's feed names beta's instance or the pool: %s", b)
		}
	}
}

func TestFeedError(t *testing.T) {
	d := New(fakeLib{fail: errors.New("state unreadable")}, NewRecorder())
	if _, err := d.Build(context.Background()); err == nil {
		t.Fatal("no error from a library that failed")
	}
}

// Latency: per minute, nearest-rank percentiles, only the last hour.
func TestLatency(t *testing.T) {
	r := NewRecorder()
	emit := func(at time.Time, typ events.Type, ms int64) {
		r.Emit(events.Event{Time: at, Event: typ, Address: "sandbox.a", ElapsedMS: ms})
	}
	now := t0.Add(2 * time.Hour)
	emit(now.Add(-61*time.Minute), events.Provisioned, 99999) // out of the window
	for i := int64(1); i <= 20; i++ {
		emit(now.Add(-10*time.Minute).Add(time.Duration(i)*time.Second), events.Provisioned, i*100)
	}
	emit(now.Add(-time.Minute), events.Replaced, 7000)
	emit(now.Add(-time.Minute), events.PoolClaimed, 50)
	emit(now.Add(-time.Minute), events.Reused, 3) // not drawn
	emit(now.Add(-time.Minute), events.Released, 0)
	l := r.Latency(func(string) bool { return true }, now)
	want := Series{Stats: Stats{Count: 21, P50: 1100, P95: 2000, Max: 7000}, Buckets: []Bucket{
		{Start: now.Add(-10 * time.Minute), Stats: Stats{Count: 20, P50: 1000, P95: 1900, Max: 2000}},
		{Start: now.Add(-time.Minute), Stats: Stats{Count: 1, P50: 7000, P95: 7000, Max: 7000}},
	}}
	if diff := cmp.Diff(want, l.ColdStart); diff != "" {
		t.Errorf("cold starts (-want +got):\n%s", diff)
	}
	if l.Claim.Count != 1 || l.Claim.P50 != 50 || len(l.Claim.Buckets) != 1 {
		t.Errorf("claims: %+v", l.Claim)
	}
	if !l.From.Equal(now.Add(-time.Hour)) || !l.To.Equal(now) || l.BucketSeconds != 60 {
		t.Errorf("window %v–%v, bucket %d s", l.From, l.To, l.BucketSeconds)
	}
}

// The ring keeps the newest MaxEvents events.
func TestRecorderBounded(t *testing.T) {
	r := NewRecorder()
	for i := range MaxEvents + 7 {
		r.Emit(events.Event{Time: t0, Event: events.Extended, Generation: i})
	}
	all := r.Events(func(string) bool { return true }, MaxEvents+100)
	if len(all) != MaxEvents || all[0].Generation != MaxEvents+6 || all[len(all)-1].Generation != 7 {
		t.Fatalf("%d events, newest %d, oldest %d", len(all), all[0].Generation, all[len(all)-1].Generation)
	}
	if got := r.Events(func(string) bool { return true }, 3); len(got) != 3 || got[2].Generation != MaxEvents+4 {
		t.Fatalf("the last 3: %+v", got)
	}
}

// The page and its assets: served with a strict policy, and nothing in
// them is fetched from anywhere but this server.
func TestPageIsSelfContained(t *testing.T) {
	h := Page()
	for _, path := range []string{PathPage, PathScript, PathStyle, PathIcon} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest("GET", path, nil))
		if w.Code != 200 || !strings.Contains(w.Header().Get("Content-Security-Policy"), "default-src 'none'") ||
			w.Header().Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("GET %s: %d %v", path, w.Code, w.Header())
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest("GET", "/dashboard/nope.js", nil))
	if w.Code != 404 || !strings.Contains(w.Body.String(), `"not_found"`) {
		t.Errorf("GET an unknown asset: %d %s", w.Code, w.Body)
	}
	// No URL of another host, no import, no inline script or style the
	// policy would refuse anyway, no HTML written from data.
	external := regexp.MustCompile(`https?://|//[a-z0-9.-]+\.[a-z]{2,}/|@import|url\(`)
	err := fs.WalkDir(web, "web", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := web.ReadFile(path)
		src := strings.ReplaceAll(string(b), `"http://www.w3.org/2000/svg"`, "") // a namespace name, never fetched
		if m := external.FindString(src); m != "" {
			t.Errorf("%s refers outside the server: %q", path, m)
		}
		for _, bad := range []string{"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "<script>", "style=", "localStorage"} {
			if strings.Contains(src, bad) {
				t.Errorf("%s uses %s", path, bad)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
