// Package providertest is the conformance suite every sandbox provider
// must pass, in the spirit of Terraform's statemgr.TestFull: one set of
// behaviours apply, the on-demand broker and the reaper rely on, run
// against any apply.Provider. The fake provider and the Docker provider
// (against a real engine) both run it.
//
// What this package must never do: loosen an assertion for one provider.
// A behaviour a provider cannot meet is a bug in that provider or a change
// to the apply.Provider contract, made here for all.
package providertest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/services"
	"github.com/sandboxer/sandboxer/state"
)

// Subject is one provider under test.
type Subject struct {
	Provider apply.Provider
	// Lineage labels what the suite creates; empty picks a random one.
	// Give one when the harness cleans up by lineage.
	Lineage string
	// Features is what each instance runs; nil means bare postgres and
	// redis.
	Features config.FeatureSet
	// Servers: real servers answer behind the provider (not the
	// in-memory fake), so the service-level capabilities run (credential
	// rotation, data movement).
	Servers bool
	// Runtime labels the results in the conformance table ("docker",
	// "kubernetes"); "" records nothing (record.go).
	Runtime string
}

// Run runs every conformance test; newSubject is called once per test.
func Run(t *testing.T, newSubject func(t *testing.T) Subject) {
	tests := []struct {
		name string
		fn   func(t *testing.T, s *suite)
	}{
		{"CreateProbeDelete", testCreateProbeDelete},
		{"ReplaceNewBeforeOld", testReplaceNewBeforeOld},
		{"WrongCredentialsRefused", testWrongCredentials},
		{"DeleteOfUnknownSucceeds", testDeleteUnknown},
		{"CheckRejectsUnknownService", testCheckUnknown},
		{"CancelledCreateFails", testCancelledCreate},
		{"Inventory", testInventory},
		{"NetworkChecker", testNetworkChecker},
		{"Pinger", testPinger},
		{"RotateCredentials", testRotateCredentials},
		{"DataRoundTrip", testDataRoundTrip},
	}
	res := Result{Outcomes: map[string]string{}}
	ran := map[string]bool{}
	var mu sync.Mutex
	for _, tc := range tests {
		ok := t.Run(tc.name, func(t *testing.T) {
			sub := newSubject(t)
			s := &suite{Subject: sub}
			if s.Lineage == "" {
				s.Lineage = randomHex()
			}
			if s.Features == nil {
				s.Features = config.FeatureSet{"postgres": {}, "redis": {}}
			}
			mu.Lock()
			res.Runtime, res.Services = s.Runtime, s.Features.Services()
			ran[tc.name] = true
			mu.Unlock()
			// t.Skip ends the test's goroutine: a deferred check sees it.
			defer func() {
				if t.Skipped() {
					mu.Lock()
					res.Outcomes[tc.name] = Skipped
					mu.Unlock()
				}
			}()
			tc.fn(t, s)
		})
		mu.Lock()
		if _, skipped := res.Outcomes[tc.name]; ran[tc.name] && !skipped {
			res.Outcomes[tc.name] = Failed
			if ok {
				res.Outcomes[tc.name] = Passed
			}
		}
		mu.Unlock()
	}
	// Only a whole run is recorded (a -run filter leaves tests out).
	if os.Getenv(RecordEnv) == "1" && res.Runtime != "" && len(ran) == len(tests) {
		if err := res.write(); err != nil {
			t.Errorf("record the conformance results: %v", err)
		}
	}
}

type suite struct {
	Subject
}

func (s *suite) ctx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// create provisions one instance and deletes it when the test ends.
func (s *suite) create(t *testing.T, addr string, gen int) *state.Record {
	t.Helper()
	// A database name other than the default: the role must own the one
	// the configuration names (frameworks connect to it by name).
	req := apply.CreateRequest{Address: addr, Lineage: s.Lineage, Generation: gen, Features: s.Features, Database: conformanceDB}
	c, err := s.Provider.Create(s.ctx(t), req)
	if err != nil {
		t.Fatalf("Create %s#%d: %v", addr, gen, err)
	}
	if c == nil {
		t.Fatalf("Create %s#%d: nil result without an error", addr, gen)
	}
	rec := &state.Record{
		Address: addr, Services: s.Features.Services(), Features: s.Features,
		AvailableExtensions: c.AvailableExtensions, Credentials: c.Credentials,
		Resources: c.Resources, CreatedAt: time.Now(), Generation: gen,
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.Provider.Delete(ctx, rec); err != nil {
			t.Errorf("cleanup: Delete %s: %v", addr, err)
		}
	})
	return rec
}

// conformanceDB is the database name every Create of the suite asks for.
const conformanceDB = "conformance_db"

func testCreateProbeDelete(t *testing.T, s *suite) {
	ctx := s.ctx(t)
	rec := s.create(t, "sandbox.conformance", 1)
	for _, svc := range s.Features.Services() {
		c, ok := rec.Credentials[svc]
		switch {
		case !ok:
			t.Errorf("no credentials for %s", svc)
		case c.Host == "" || c.Port <= 0 || c.Port > 65535:
			t.Errorf("%s endpoint %q:%d is not usable", svc, c.Host, c.Port)
		case c.User == "" || c.Password.Reveal() == "":
			t.Errorf("%s: empty user or password", svc)
		case namesDatabase(svc) && c.Database != conformanceDB:
			t.Errorf("%s: database %q, want the requested %q", svc, c.Database, conformanceDB)
		}
	}
	if rec.Resources.Network == "" && len(rec.Resources.Containers) == 0 {
		t.Error("Create reported no resources: nothing could find them again")
	}
	if err := s.Provider.Probe(ctx, rec); err != nil {
		t.Fatalf("Probe of a fresh instance: %v", err)
	}
	if err := s.Provider.Delete(ctx, rec); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	err := s.Provider.Probe(ctx, rec)
	if !errors.Is(err, apply.ErrNotFound) {
		t.Errorf("Probe after Delete = %v, want an error wrapping apply.ErrNotFound", err)
	}
	if err := s.Provider.Delete(ctx, rec); err != nil {
		t.Errorf("second Delete = %v, want success (already gone)", err)
	}
}

// A replace provisions generation 2 while 1 is live, then deletes 1: the
// two must not share anything that deleting 1 would break.
func testReplaceNewBeforeOld(t *testing.T, s *suite) {
	ctx := s.ctx(t)
	old := s.create(t, "sandbox.conformance", 1)
	repl := s.create(t, "sandbox.conformance", 2)
	for _, svc := range s.Features.Services() {
		if old.Credentials[svc].Password.Reveal() == repl.Credentials[svc].Password.Reveal() {
			t.Errorf("%s: the replacement reuses the old password; credentials must rotate", svc)
		}
	}
	if err := s.Provider.Probe(ctx, old); err != nil {
		t.Fatalf("Probe generation 1 while 2 exists: %v", err)
	}
	if err := s.Provider.Delete(ctx, old); err != nil {
		t.Fatalf("Delete generation 1: %v", err)
	}
	if err := s.Provider.Probe(ctx, repl); err != nil {
		t.Errorf("Probe generation 2 after deleting 1: %v", err)
	}
}

// A probe with credentials the engine did not hand out fails, and its
// error never shows either password.
func testWrongCredentials(t *testing.T, s *suite) {
	ctx := s.ctx(t)
	rec := s.create(t, "sandbox.conformance", 1)
	svc := s.Features.Services()[0]
	real := rec.Credentials[svc].Password.Reveal()
	forged := *rec
	forged.Credentials = map[string]state.Credentials{}
	for k, v := range rec.Credentials {
		forged.Credentials[k] = v
	}
	c := forged.Credentials[svc]
	c.Password = state.Secret("wrong-" + randomHex())
	forged.Credentials[svc] = c
	err := s.Provider.Probe(ctx, &forged)
	if err == nil {
		t.Fatalf("Probe with a wrong %s password succeeded", svc)
	}
	for _, sec := range []string{real, c.Password.Reveal()} {
		if strings.Contains(fmt.Sprintf("%v %+v", err, err), sec) {
			t.Errorf("Probe's error shows a password: %v", err)
		}
	}
	if err := s.Provider.Probe(ctx, rec); err != nil {
		t.Errorf("Probe with the real credentials after a refused one: %v", err)
	}
}

// Deleting what the engine never had (a record left by a crash, resources
// removed by hand) succeeds: delete is idempotent.
func testDeleteUnknown(t *testing.T, s *suite) {
	rec := &state.Record{Address: "sandbox.never", Services: s.Features.Services(), Features: s.Features, Generation: 7,
		Resources:   state.Resources{Network: "sbx-never-" + randomHex()[:12], Containers: map[string]string{}},
		Credentials: map[string]state.Credentials{}}
	for _, svc := range s.Features.Services() {
		rec.Resources.Containers[svc] = randomHex() + randomHex()
		// Port 1 on loopback: nothing answers there.
		rec.Credentials[svc] = state.Credentials{Host: "127.0.0.1", Port: 1, User: "app", Password: state.Secret(randomHex()), Database: "app"}
	}
	if err := s.Provider.Delete(s.ctx(t), rec); err != nil {
		t.Errorf("Delete of resources that never existed = %v, want success", err)
	}
	if err := s.Provider.Probe(s.ctx(t), rec); !errors.Is(err, apply.ErrNotFound) {
		t.Errorf("Probe of resources that never existed = %v, want apply.ErrNotFound", err)
	}
}

func testCheckUnknown(t *testing.T, s *suite) {
	var uses []plan.ImageUse
	for _, svc := range s.Features.Services() {
		uses = append(uses, plan.ImageUse{Service: svc}) // the provider's own choice
	}
	caps, err := s.Provider.Check(s.ctx(t), uses)
	if err != nil {
		t.Errorf("Check(%v) = %v", uses, err)
	}
	// What Create provides must not be reported missing by Check: plan
	// would refuse it. (A service left out of caps is simply not checked.)
	for svc, feats := range s.Features {
		ic, ok := caps[plan.ImageUse{Service: svc}]
		if !ok {
			continue
		}
		for _, f := range feats {
			if _, ok := ic.Features[f]; !ok {
				t.Errorf("Check reports %s feature %q missing from %q, which Create provides; reported: %v", svc, f, ic.Image, ic.Features)
			}
		}
	}
	if _, err := s.Provider.Check(s.ctx(t), []plan.ImageUse{{Service: "mongodb"}}); err == nil {
		t.Error("Check accepted a service no catalog has")
	}
}

func testCancelledCreate(t *testing.T, s *suite) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c, err := s.Provider.Create(ctx, apply.CreateRequest{Address: "sandbox.cancelled", Lineage: s.Lineage, Generation: 1, Features: s.Features})
	if err == nil {
		rec := &state.Record{Address: "sandbox.cancelled", Resources: c.Resources, Credentials: c.Credentials, Generation: 1}
		_ = s.Provider.Delete(context.Background(), rec)
		t.Fatal("Create with a cancelled context succeeded")
	}
}

func randomHex() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// namesDatabase reports whether svc's credentials name the requested
// database (services.Service).
func namesDatabase(svc string) bool {
	s, ok := services.Lookup(svc)
	return ok && s.NamesDatabase()
}
