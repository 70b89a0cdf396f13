package providertest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/sandboxer/sandboxer/services"
	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

// The service-level half of the suite: what the library does with a
// running instance through its services' own contract (services.Service)
// and the runtime's exec (snapshot.Engine). They need real servers
// (Subject.Servers).

// A warm-pool claim binds the claimant's credentials by rotating the app
// user's password in place (package rotate, services.Service.Rotate): the
// new password logs in, the old one no longer does, and the runtime's
// probe passes with the record that holds the new one.
func testRotateCredentials(t *testing.T, s *suite) {
	if !s.Servers {
		t.Skip("no real servers behind this provider")
	}
	ctx := s.ctx(t)
	rec := s.create(t, "sandbox.rotate", 1)
	for _, svc := range s.Features.Services() {
		sv, ok := services.Lookup(svc)
		if !ok {
			t.Fatalf("%s is not in the catalogue", svc)
		}
		old := rec.Credentials[svc]
		tlsConf, err := old.ClientTLS(old.Host)
		if err != nil {
			t.Fatal(err)
		}
		pw := state.Secret("claimed-" + randomHex()[:20])
		if err := sv.Rotate(ctx, old, pw); err != nil {
			t.Fatalf("%s: Rotate: %v", svc, err)
		}
		c := old
		c.Password = pw
		rec.Credentials[svc] = c
		if err := sv.Ping(ctx, c, tlsConf); err != nil {
			t.Errorf("%s: the claimant's password: %v", svc, err)
		}
		if err := sv.Ping(ctx, old, tlsConf); err == nil {
			t.Errorf("%s: the password the pool member was made with still logs in", svc)
		}
	}
	if err := s.Provider.Probe(ctx, rec); err != nil {
		t.Errorf("Probe with the rotated credentials: %v", err)
	}
}

// Snapshot, restore and carried data through the runtime's exec
// (snapshot.Engine with each service's mover): a dump of one instance
// loads into it again (restore, reset) and into a second instance made
// with other credentials (carried data), which answers afterwards and
// dumps again.
func testDataRoundTrip(t *testing.T, s *suite) {
	eng, ok := s.Provider.(snapshot.Engine)
	if !s.Servers || !ok {
		t.Skip("no real servers or no snapshot.Engine behind this provider")
	}
	ctx := s.ctx(t)
	from := s.create(t, "sandbox.datafrom", 1)
	to := s.create(t, "sandbox.datato", 1)
	dir := t.TempDir()
	for _, svc := range s.Features.Services() {
		var dump bytes.Buffer
		if err := eng.Dump(ctx, from, svc, &dump); err != nil {
			t.Fatalf("%s: Dump: %v", svc, err)
		}
		path := filepath.Join(dir, svc)
		if err := os.WriteFile(path, dump.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		d := snapshot.Data{Key: randomHex(), Path: path, Size: int64(dump.Len())}
		for _, rec := range []*state.Record{from, to} {
			if err := eng.Keep(ctx, rec, svc, d); err != nil {
				t.Fatalf("%s: Keep into %s: %v", svc, rec.Address, err)
			}
			if err := eng.Load(ctx, rec, svc, d); err != nil {
				t.Fatalf("%s: Load into %s: %v", svc, rec.Address, err)
			}
		}
		var again bytes.Buffer
		if err := eng.Dump(ctx, to, svc, &again); err != nil {
			t.Errorf("%s: Dump after a carried load: %v", svc, err)
		}
	}
	for _, rec := range []*state.Record{from, to} {
		if err := s.Provider.Probe(ctx, rec); err != nil {
			t.Errorf("Probe of %s after loads: %v", rec.Address, err)
		}
	}
}
