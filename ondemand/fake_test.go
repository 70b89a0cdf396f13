package ondemand

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/events"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/state"
)

// fakeProvider records calls; "resources" live in a map by address+gen.
type fakeProvider struct {
	mu      sync.Mutex
	calls   []string
	live    map[string]bool // "addr#gen"
	dead    map[string]bool // probes of these fail
	creates int
	delay   time.Duration
	n       int
	failNew error             // Create fails with it when set
	caps    plan.Capabilities // what Check reports (nil: nothing checked)
}

func newFake() *fakeProvider {
	return &fakeProvider{live: map[string]bool{}, dead: map[string]bool{}}
}

func (f *fakeProvider) Check(context.Context, []plan.ImageUse) (plan.Capabilities, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.caps, nil
}

func (f *fakeProvider) Create(ctx context.Context, req apply.CreateRequest) (*apply.Created, error) {
	if f.delay > 0 {
		time.Sleep(f.delay)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failNew != nil {
		f.calls = append(f.calls, "create failed")
		return nil, f.failNew
	}
	f.creates++
	f.n++
	key := fmt.Sprintf("%s#%d", req.Address, req.Generation)
	f.calls = append(f.calls, "create "+key+" "+req.Features.String())
	f.live[key] = true
	creds := map[string]state.Credentials{}
	for _, svc := range req.Features.Services() {
		c := state.Credentials{Host: "127.0.0.1", Port: 1000 + f.n, User: "app", Password: state.Secret(fmt.Sprintf("pw-%d", f.n))}
		if svc == "postgres" {
			c.Database = req.Database
			if c.Database == "" {
				c.Database = config.DefaultDatabase
			}
		}
		creds[svc] = c
	}
	return &apply.Created{Credentials: creds, Resources: state.Resources{Network: key}}, nil
}

func (f *fakeProvider) Probe(ctx context.Context, rec *state.Record) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := fmt.Sprintf("%s#%d", rec.ResourceAddress(), rec.Generation)
	f.calls = append(f.calls, "probe "+key)
	if f.dead[key] || !f.live[key] {
		return fmt.Errorf("probe %s: %w", key, apply.ErrNotFound)
	}
	return nil
}

func (f *fakeProvider) Delete(ctx context.Context, rec *state.Record) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := fmt.Sprintf("%s#%d", rec.ResourceAddress(), rec.Generation)
	f.calls = append(f.calls, "delete "+key)
	delete(f.live, key)
	return nil
}

func (f *fakeProvider) log() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.calls...)
}

func (f *fakeProvider) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

// recorder keeps events.
type recorder struct {
	mu sync.Mutex
	ev []events.Event
}

func (r *recorder) Emit(e events.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ev = append(r.ev, e)
}

func (r *recorder) types() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.ev {
		out = append(out, string(e.Event)+" "+e.Address+fmt.Sprintf(" g%d %s", e.Generation, e.Reason))
	}
	return out
}

const testConfig = `
project "shop" {
  services   = ["postgres", "redis"]
  extensions = { postgres = ["pg_trgm"] }
}

project "cache" {
  services = ["redis"]
}

sandbox "agent" {
  project   = project.shop
  services  = ["redis"]
  on_demand = true
  ttl       = "1h"
}

sandbox "kv" {
  project   = project.cache
  on_demand = true
}

sandbox "dev" {
  project = project.shop
}
`

type env struct {
	b     *Broker
	prov  *fakeProvider
	store *state.Store
	ev    *recorder
	now   time.Time
	mu    sync.Mutex
}

func (e *env) clock() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.now
}

func (e *env) advance(d time.Duration) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.now = e.now.Add(d)
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return newEnvWith(t, testConfig)
}

func newEnvWith(t *testing.T, src string) *env {
	t.Helper()
	cat := config.DefaultCatalog()
	cfg, diags := config.LoadSources(t.TempDir(), map[string][]byte{"main.sbx.hcl": []byte(src)}, config.Input{}, cat)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	e := &env{prov: newFake(), store: state.Open(t.TempDir() + "/state.db"), ev: &recorder{},
		now: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)}
	e.b = &Broker{Config: cfg, Catalog: cat, Store: e.store, Provider: e.prov, Events: e.ev, Now: e.clock}
	return e
}
