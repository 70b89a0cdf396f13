package apply_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/state"
)

// These tests drive the executor with an in-memory provider to pin down
// ordering and failure handling that a real engine cannot produce on
// demand (a state write failing, an interrupt landing between two
// changes). The same behaviour on the real engine is covered by the
// docker tests in this package and the CLI scripts.

// memProvider keeps "instances" as a set of address#generation keys.
type memProvider struct {
	mu          sync.Mutex
	live        map[string]bool
	createErr   map[string]error // by address
	deleteErr   map[string]error // by address#generation
	calls       []string
	inflight    int
	maxInflight int
	// started, when set, hears every Create as it begins.
	started chan string
	// release, when set, holds every Create until it is closed or the
	// context ends. finishOnCancel makes a cancelled Create succeed anyway
	// (the engine finished just as the interrupt came).
	release        chan struct{}
	finishOnCancel bool
	// sleep is how long each Create takes.
	sleep time.Duration
}

func newMem() *memProvider {
	return &memProvider{live: map[string]bool{}, createErr: map[string]error{}, deleteErr: map[string]error{}}
}

func key(addr string, gen int) string { return fmt.Sprintf("%s#%d", addr, gen) }

func (m *memProvider) note(call string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls = append(m.calls, call)
}

func (m *memProvider) Check(context.Context, []plan.ImageUse) (plan.Capabilities, error) {
	return nil, nil
}

func (m *memProvider) Create(ctx context.Context, req apply.CreateRequest) (*apply.Created, error) {
	m.note("create " + key(req.Address, req.Generation))
	m.mu.Lock()
	m.inflight++
	m.maxInflight = max(m.maxInflight, m.inflight)
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.inflight--
		m.mu.Unlock()
	}()
	if m.started != nil {
		m.started <- req.Address
	}
	if m.release != nil {
		select {
		case <-m.release:
		case <-ctx.Done():
			if !m.finishOnCancel {
				return nil, fmt.Errorf("create %s: interrupted: %w", req.Address, ctx.Err())
			}
		}
	}
	time.Sleep(m.sleep)
	if err := m.createErr[req.Address]; err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.live[key(req.Address, req.Generation)] = true
	return &apply.Created{
		Credentials: map[string]state.Credentials{"postgres": {Host: "127.0.0.1", Port: 5432, User: "app", Password: "secret"}},
		Resources:   state.Resources{Containers: map[string]string{"postgres": "id-" + key(req.Address, req.Generation)}},
	}, nil
}

func (m *memProvider) Probe(ctx context.Context, rec *state.Record) error { return nil }

func (m *memProvider) Delete(ctx context.Context, rec *state.Record) error {
	k := key(rec.Address, rec.Generation)
	m.note("delete " + k)
	if err := m.deleteErr[k]; err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.live, k)
	return nil
}

func (m *memProvider) liveKeys() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for k := range m.live {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func (m *memProvider) callList() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls)
}

// faultyStore fails Put or Delete on demand.
type faultyStore struct {
	*state.Store
	putErr, deleteErr error
}

func (s *faultyStore) Put(ctx context.Context, rec *state.Record) error {
	if s.putErr != nil {
		return s.putErr
	}
	return s.Store.Put(ctx, rec)
}

func (s *faultyStore) Delete(ctx context.Context, addr string) error {
	if s.deleteErr != nil {
		return s.deleteErr
	}
	return s.Store.Delete(ctx, addr)
}

// hookLog records hook calls in order.
type hookLog struct {
	mu     sync.Mutex
	events []string
}

func (h *hookLog) add(s string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, s)
}

func (h *hookLog) PreApply(addr string, a plan.Action) { h.add("pre " + addr) }
func (h *hookLog) Progress(addr string, a plan.Action, _ time.Duration) {
	// A slow listener widens the window in which a late Progress could
	// land after PostApply.
	time.Sleep(time.Millisecond)
	h.add("progress " + addr)
}
func (h *hookLog) PostApply(addr string, a plan.Action, _ time.Duration, gen int, err error) {
	h.add(fmt.Sprintf("post %s %d %v", addr, gen, err != nil))
}

func (h *hookLog) list() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.events)
}

var pg = config.FeatureSet{"postgres": {}}

func addr(name string) config.Address { return config.Address{Name: name} }

func create(name string) *plan.Change {
	return &plan.Change{Addr: addr(name), Project: "p", Action: plan.Create,
		After: &plan.Sandbox{Services: pg.Services(), Features: pg}}
}

func replace(name string, priorGen int) *plan.Change {
	c := create(name)
	c.Action, c.PriorGeneration = plan.CreateThenDelete, priorGen
	return c
}

func destroy(name string, priorGen int) *plan.Change {
	return &plan.Change{Addr: addr(name), Project: "p", Action: plan.Delete, PriorGeneration: priorGen}
}

// fixture is a real state store in a temporary directory with an
// in-memory provider whose instances match the seeded records.
type fixture struct {
	store *state.Store
	prov  *memProvider
	exec  *apply.Executor
	hook  *hookLog
}

func newFixture(t *testing.T, seeded ...string) *fixture {
	t.Helper()
	ctx := context.Background()
	st := state.Open(filepath.Join(t.TempDir(), "state.db"))
	lineage, err := st.EnsureLineage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	prov := newMem()
	for _, name := range seeded {
		a := addr(name).String()
		rec := &state.Record{Address: a, Project: "p", Services: pg.Services(), Features: pg, Generation: 1,
			Resources: state.Resources{Containers: map[string]string{"postgres": "id-" + key(a, 1)}}}
		if err := st.Put(ctx, rec); err != nil {
			t.Fatal(err)
		}
		prov.live[key(a, 1)] = true
	}
	h := &hookLog{}
	return &fixture{store: st, prov: prov, hook: h,
		exec: &apply.Executor{Provider: prov, Store: st, Hook: h, Lineage: lineage, Parallelism: 4}}
}

func (f *fixture) generations(t *testing.T) map[string]int {
	t.Helper()
	snap, err := f.store.Snapshot(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for a, r := range snap.Records {
		out[a] = r.Generation
	}
	return out
}

func (f *fixture) apply(t *testing.T, changes ...*plan.Change) (apply.Result, error) {
	t.Helper()
	return f.exec.Apply(context.Background(), nil, &plan.Plan{Changes: changes})
}

func wantErrContains(t *testing.T, err error, subs ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want one containing %q", subs)
	}
	for _, s := range subs {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error lacks %q:\n%v", s, err)
		}
	}
}

func TestApplyCreateReplaceDelete(t *testing.T) {
	f := newFixture(t, "b", "c")
	res, err := f.apply(t, create("a"), replace("b", 1), destroy("c", 1),
		&plan.Change{Addr: addr("d"), Action: plan.NoOp})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(apply.Result{Created: 1, Replaced: 1, Destroyed: 1, Reused: 1}, res); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"sandbox.a": 1, "sandbox.b": 2}, f.generations(t)); diff != "" {
		t.Errorf("state generations (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"sandbox.a#1", "sandbox.b#2"}, f.prov.liveKeys()); diff != "" {
		t.Errorf("live instances (-want +got):\n%s", diff)
	}
	// New before old.
	calls := f.prov.callList()
	if slices.Index(calls, "create sandbox.b#2") > slices.Index(calls, "delete sandbox.b#1") {
		t.Errorf("old generation removed before the new one was created: %q", calls)
	}
}

func TestApplyEvictsDeadInstance(t *testing.T) {
	f := newFixture(t, "a")
	ch := create("a")
	ch.Reason, ch.Evict, ch.PriorGeneration = plan.ReasonDead, true, 1
	if _, err := f.apply(t, ch); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"delete sandbox.a#1", "create sandbox.a#2"}, f.prov.callList()); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"sandbox.a": 2}, f.generations(t)); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
}

// A replacement that fails leaves the old instance alive and its record
// untouched.
func TestApplyReplaceFailureKeepsOld(t *testing.T) {
	f := newFixture(t, "a")
	f.prov.createErr["sandbox.a"] = errors.New("image lacks extension")
	res, err := f.apply(t, replace("a", 1))
	wantErrContains(t, err, "sandbox.a: replace: image lacks extension")
	var ie *apply.InstanceError
	if !errors.As(err, &ie) || ie.Addr != "sandbox.a" {
		t.Errorf("error is not an InstanceError for sandbox.a: %#v", err)
	}
	if res != (apply.Result{}) {
		t.Errorf("result %+v, want nothing done", res)
	}
	if diff := cmp.Diff(map[string]int{"sandbox.a": 1}, f.generations(t)); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"sandbox.a#1"}, f.prov.liveKeys()); diff != "" {
		t.Errorf("live (-want +got):\n%s", diff)
	}
}

// When the old generation cannot be removed, the new one is still recorded
// (it is ready and in use from now on) and the error says what is left.
func TestApplyReplaceOldDeleteFails(t *testing.T) {
	f := newFixture(t, "a")
	f.prov.deleteErr["sandbox.a#1"] = errors.New("engine said no")
	_, err := f.apply(t, replace("a", 1))
	wantErrContains(t, err, "replacement generation 2 is ready", "removing generation 1 failed", "engine said no")
	if diff := cmp.Diff(map[string]int{"sandbox.a": 2}, f.generations(t)); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
}

// Removing the old generation finishes even when a second Ctrl-C lands
// right after the replacement was recorded: nothing else would remove it.
func TestApplyReplaceRemovesOldAfterHardCancel(t *testing.T) {
	f := newFixture(t, "a")
	f.prov.started = make(chan string, 1)
	f.prov.release = make(chan struct{})
	f.prov.finishOnCancel = true
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-f.prov.started
		cancel()
	}()
	if _, err := f.exec.Apply(ctx, nil, &plan.Plan{Changes: []*plan.Change{replace("a", 1)}}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"sandbox.a#2"}, f.prov.liveKeys()); diff != "" {
		t.Errorf("live (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]int{"sandbox.a": 2}, f.generations(t)); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
}

// An instance that cannot be recorded is taken down again: otherwise
// nothing would ever know to remove it.
func TestApplyRecordFailureRemovesInstance(t *testing.T) {
	f := newFixture(t)
	f.exec.Store = &faultyStore{Store: f.store, putErr: errors.New("disk full")}
	_, err := f.apply(t, create("a"))
	wantErrContains(t, err, "record in state: disk full", "removed again")
	if got := f.prov.liveKeys(); len(got) != 0 {
		t.Errorf("left running: %q", got)
	}
	if diff := cmp.Diff(map[string]int{}, f.generations(t)); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
}

// A delete whose record removal fails says so: the resources are gone but
// the record stays, and the message tells how to drop it.
func TestApplyDeleteRecordRemovalFails(t *testing.T) {
	f := newFixture(t, "a")
	f.exec.Store = &faultyStore{Store: f.store, deleteErr: errors.New("read-only file system")}
	res, err := f.apply(t, destroy("a", 1))
	wantErrContains(t, err, "sandbox.a: destroy: its resources are removed", "state rm sandbox.a", "read-only file system")
	if res.Destroyed != 0 {
		t.Errorf("counted as destroyed: %+v", res)
	}
	if got := f.prov.liveKeys(); len(got) != 0 {
		t.Errorf("left running: %q", got)
	}
	if diff := cmp.Diff(map[string]int{"sandbox.a": 1}, f.generations(t)); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
}

func TestApplyDeleteAbsentSucceeds(t *testing.T) {
	f := newFixture(t)
	res, err := f.apply(t, destroy("gone", 3))
	if err != nil {
		t.Fatal(err)
	}
	if res.Destroyed != 1 || len(f.prov.callList()) != 0 {
		t.Errorf("result %+v, calls %q", res, f.prov.callList())
	}
}

// A record that changed since the plan is never overwritten or removed:
// creating over a live record would drop the only pointer to it.
func TestApplyRefusesChangedState(t *testing.T) {
	f := newFixture(t, "a", "b", "c")
	_, err := f.apply(t, create("a"), replace("b", 7), destroy("c", 2))
	wantErrContains(t, err,
		"sandbox.a: create: state changed since the plan was made (planned against no record, state now holds generation 1)",
		"sandbox.b: replace: state changed since the plan was made (planned against generation 7",
		"sandbox.c: destroy: state changed since the plan was made (planned against generation 2")
	if calls := f.prov.callList(); len(calls) != 0 {
		t.Errorf("provider was called: %q", calls)
	}
	if diff := cmp.Diff(map[string]int{"sandbox.a": 1, "sandbox.b": 1, "sandbox.c": 1}, f.generations(t)); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
}

func TestApplyPartialFailure(t *testing.T) {
	f := newFixture(t)
	f.prov.createErr["sandbox.bad"] = errors.New("boom")
	res, err := f.apply(t, create("bad"), create("good"))
	wantErrContains(t, err, "sandbox.bad: create: boom")
	if strings.Contains(err.Error(), "sandbox.good") {
		t.Errorf("error names the good instance: %v", err)
	}
	if res.Created != 1 {
		t.Errorf("result %+v", res)
	}
	if diff := cmp.Diff(map[string]int{"sandbox.good": 1}, f.generations(t)); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
}

// An interrupt before anything starts starts nothing, every time: with a
// free slot and a closed stop channel both ready, a bare select would
// pick either.
func TestApplyStoppedBeforeStart(t *testing.T) {
	for i := range 50 {
		f := newFixture(t)
		stop := make(chan struct{})
		close(stop)
		res, err := f.exec.Apply(context.Background(), stop, &plan.Plan{Changes: []*plan.Change{create("a"), create("b")}})
		var ie *apply.InterruptedError
		if !errors.As(err, &ie) {
			t.Fatalf("run %d: got %v, want an InterruptedError", i, err)
		}
		if diff := cmp.Diff([]string{"sandbox.a", "sandbox.b"}, ie.Skipped); diff != "" {
			t.Fatalf("run %d: skipped (-want +got):\n%s", i, diff)
		}
		if res != (apply.Result{}) || len(f.prov.callList()) != 0 || len(f.hook.list()) != 0 {
			t.Fatalf("run %d: something ran: %+v %q %q", i, res, f.prov.callList(), f.hook.list())
		}
	}
}

// A first Ctrl-C while one change runs lets it finish and be recorded and
// starts nothing more — every time, not just when select happens to pick
// the stop channel over the free slot.
func TestApplyStoppedWhileInFlight(t *testing.T) {
	for i := range 50 {
		f := newFixture(t)
		f.exec.Parallelism = 1
		f.prov.started = make(chan string, 2)
		f.prov.release = make(chan struct{})
		stop := make(chan struct{})
		go func() {
			<-f.prov.started
			close(stop)
			close(f.prov.release)
		}()
		res, err := f.exec.Apply(context.Background(), stop, &plan.Plan{Changes: []*plan.Change{create("a"), create("b")}})
		wantErrContains(t, err, "interrupted: 1 change(s) not started (sandbox.b); run apply again to finish")
		if res.Created != 1 {
			t.Fatalf("run %d: result %+v, calls %q", i, res, f.prov.callList())
		}
		if diff := cmp.Diff(map[string]int{"sandbox.a": 1}, f.generations(t)); diff != "" {
			t.Fatalf("run %d: state (-want +got):\n%s", i, diff)
		}
	}
}

// A second Ctrl-C (ctx cancelled) abandons the change in flight: the
// provider cleans up, nothing is recorded, nothing more starts.
func TestApplyHardCancelAbandons(t *testing.T) {
	f := newFixture(t)
	f.exec.Parallelism = 1
	f.prov.started = make(chan string, 2)
	f.prov.release = make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-f.prov.started
		cancel()
	}()
	_, err := f.exec.Apply(ctx, nil, &plan.Plan{Changes: []*plan.Change{create("a"), create("b")}})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error does not wrap context.Canceled: %v", err)
	}
	wantErrContains(t, err, "sandbox.a: create:", "not started (sandbox.b)")
	if diff := cmp.Diff(map[string]int{}, f.generations(t)); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
}

// An instance whose Create returned is committed even if the context
// ended meanwhile: it exists and must be findable.
func TestApplyCommitsAfterCancel(t *testing.T) {
	f := newFixture(t)
	f.prov.started = make(chan string, 1)
	f.prov.release = make(chan struct{})
	f.prov.finishOnCancel = true
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-f.prov.started
		cancel()
	}()
	if _, err := f.exec.Apply(ctx, nil, &plan.Plan{Changes: []*plan.Change{create("a")}}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]int{"sandbox.a": 1}, f.generations(t)); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
}

func TestApplyParallelismBound(t *testing.T) {
	for _, par := range []int{1, 3} {
		t.Run(fmt.Sprint(par), func(t *testing.T) {
			f := newFixture(t)
			f.exec.Parallelism = par
			f.prov.sleep = 20 * time.Millisecond
			var changes []*plan.Change
			for i := range 6 {
				changes = append(changes, create(fmt.Sprintf("s%d", i)))
			}
			res, err := f.apply(t, changes...)
			if err != nil {
				t.Fatal(err)
			}
			if res.Created != 6 {
				t.Errorf("result %+v", res)
			}
			if f.prov.maxInflight > par {
				t.Errorf("%d creates ran at once, parallelism %d", f.prov.maxInflight, par)
			}
		})
	}
}

// Progress never follows the change's PostApply.
func TestApplyNoProgressAfterPostApply(t *testing.T) {
	for range 20 {
		f := newFixture(t)
		f.exec.ProgressEvery = time.Millisecond
		f.prov.sleep = 5 * time.Millisecond
		if _, err := f.apply(t, create("a"), create("b")); err != nil {
			t.Fatal(err)
		}
		finished := map[string]bool{}
		for _, ev := range f.hook.list() {
			verb, rest, _ := strings.Cut(ev, " ")
			a, _, _ := strings.Cut(rest, " ")
			switch verb {
			case "post":
				finished[a] = true
			case "progress":
				if finished[a] {
					t.Fatalf("progress after post for %s: %q", a, f.hook.list())
				}
			}
		}
	}
}

func TestInstanceErrorDropsRepeatedAddress(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errors.New("create sandbox.a: image lacks x"), "sandbox.a: create: image lacks x"},
		{errors.New("delete sandbox.a: engine said no"), "sandbox.a: create: engine said no"},
		{errors.New("create sandbox.b: other"), "sandbox.a: create: create sandbox.b: other"},
		{errors.New("plain"), "sandbox.a: create: plain"},
	} {
		got := (&apply.InstanceError{Addr: "sandbox.a", Action: plan.Create, Err: tc.err}).Error()
		if got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
