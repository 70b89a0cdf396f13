// Package statetest is the conformance suite every state backend passes
// (state.Backend): the bbolt file and PostgreSQL run the same tests, so
// commands behave the same whichever holds their state.
//
// A backend's test calls Run with a function that makes a fresh, empty
// state for one test. Everything a test creates lives in that state; the
// suite never reaches outside it.
package statetest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/sandboxer/sandboxer/state"
)

// State is one fresh state under test.
type State interface {
	// Open returns a new Backend value on this state (as another command
	// would), sealing with keys (nil: in the clear).
	Open(t *testing.T, keys *state.Keyring) state.Backend
	// Dump returns every byte the backend stores for this state, backups
	// and history included, for checking that no secret is at rest.
	Dump(t *testing.T) []byte
	// Reset removes the state entirely, so that the next write makes one
	// with a new lineage.
	Reset(t *testing.T)
}

// Run runs the suite; newState makes a fresh empty state per subtest.
func Run(t *testing.T, newState func(t *testing.T) State) {
	tests := []struct {
		name string
		fn   func(t *testing.T, st State)
	}{
		{"Empty", testEmpty},
		{"PutGetDelete", testPutGetDelete},
		{"SerialMovesOnChangeOnly", testSerial},
		{"Lineage", testLineage},
		{"LineageReplaced", testLineageReplaced},
		{"StateLock", testStateLock},
		{"InstanceLocks", testInstanceLocks},
		{"LockWait", testLockWait},
		{"Backup", testBackup},
		{"ConcurrentWriters", testConcurrent},
		{"SealedAtRest", testSealed},
		{"MissingAndWrongKey", testWrongKey},
		{"EncryptExisting", testEncryptExisting},
		{"Rotate", testRotate},
		{"Passphrase", testPassphrase},
		{"Import", testImport},
		{"Move", testMove},
		{"Addresses", testAddresses},
		{"Leases", testLeases},
		{"LeasesConcurrent", testLeasesConcurrent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.fn(t, newState(t)) })
	}
}

// Record makes a realistic record at sandbox.app[i] whose passwords are
// unique to i and tag (so a Dump can be searched for them).
func Record(i int, tag string) *state.Record {
	created := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Minute)
	return &state.Record{
		Address:  fmt.Sprintf("sandbox.app[%d]", i),
		Project:  "shop",
		Services: []string{"postgres", "redis"},
		Features: map[string][]string{"postgres": {"pgcrypto"}, "redis": {}},
		Credentials: map[string]state.Credentials{
			"postgres": {Host: "127.0.0.1", Port: 40000 + i, User: "app", Password: state.Secret(Password(i, tag, "pg")),
				Database: "app", AdminUser: "postgres", AdminPassword: state.Secret(Password(i, tag, "admin"))},
			"redis": {Host: "127.0.0.1", Port: 50000 + i, User: "default", Password: state.Secret(Password(i, tag, "redis"))},
		},
		Resources:  state.Resources{Network: fmt.Sprintf("sbx-shop-%d", i), Containers: map[string]string{"postgres": fmt.Sprintf("ctr%d", i)}},
		CreatedAt:  created,
		Generation: 1,
	}
}

// Password is the password Record(i, tag) holds for service.
func Password(i int, tag, service string) string {
	return fmt.Sprintf("pw-%s-%s-%d-0d1f7e", tag, service, i)
}

func passwords(recs ...*state.Record) []string {
	var out []string
	for _, r := range recs {
		for _, c := range r.Credentials {
			out = append(out, c.Password.Reveal())
			if c.AdminPassword != "" {
				out = append(out, c.AdminPassword.Reveal())
			}
		}
	}
	return out
}

// Key returns a fresh random raw key, base64.
func Key(t *testing.T) string {
	t.Helper()
	k, err := newRawKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func keyring(t *testing.T, current string, old ...string) *state.Keyring {
	t.Helper()
	k, err := state.NewKeyring(current, old...)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func ctx(t *testing.T) context.Context { return t.Context() }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func snapshot(t *testing.T, b state.Backend) *state.Snapshot {
	t.Helper()
	snap, err := b.Snapshot(ctx(t))
	must(t, err)
	return snap
}

func testEmpty(t *testing.T, st State) {
	b := st.Open(t, nil)
	snap := snapshot(t, b)
	if snap.Lineage != "" || snap.Serial != 0 || len(snap.Records) != 0 {
		t.Fatalf("empty state reads as lineage %q serial %d with %d records", snap.Lineage, snap.Serial, len(snap.Records))
	}
	rec, err := b.Get(ctx(t), "sandbox.none")
	if err != nil || rec != nil {
		t.Fatalf("Get on an empty state = %v, %v", rec, err)
	}
	must(t, b.ExpectLineage(ctx(t), "", 0))
	must(t, b.Delete(ctx(t), "sandbox.none"))
	if snap := snapshot(t, st.Open(t, nil)); snap.Lineage != "" {
		t.Fatalf("deleting from an empty state created lineage %q", snap.Lineage)
	}
	if bk, err := b.Backup(ctx(t)); err != nil || bk != nil {
		t.Fatalf("Backup of a state never written = %v, %v", bk, err)
	}
	if b.Describe() == "" {
		t.Fatal("Describe is empty")
	}
}

func testPutGetDelete(t *testing.T, st State) {
	b := st.Open(t, nil)
	r0, r1 := Record(0, "pgd"), Record(1, "pgd")
	must(t, b.Put(ctx(t), r0))
	must(t, b.Put(ctx(t), r1))
	other := st.Open(t, nil)
	got, err := other.Get(ctx(t), r1.Address)
	must(t, err)
	if diff := cmp.Diff(r1, got); diff != "" {
		t.Fatalf("Get after Put (-put +got):\n%s", diff)
	}
	snap := snapshot(t, other)
	if diff := cmp.Diff(map[string]*state.Record{r0.Address: r0, r1.Address: r1}, snap.Records); diff != "" {
		t.Fatalf("Snapshot (-want +got):\n%s", diff)
	}
	insp, err := other.Inspect(ctx(t))
	must(t, err)
	if len(insp.Records) != 2 || len(insp.Damaged) != 0 {
		t.Fatalf("Inspect: %d records, %d damaged", len(insp.Records), len(insp.Damaged))
	}
	must(t, other.Delete(ctx(t), r0.Address))
	if got, err := b.Get(ctx(t), r0.Address); err != nil || got != nil {
		t.Fatalf("Get after Delete = %v, %v", got, err)
	}
	if err := b.Put(ctx(t), &state.Record{}); err == nil {
		t.Fatal("Put of a record without address succeeded")
	}
}

func testSerial(t *testing.T, st State) {
	b := st.Open(t, nil)
	serial := func() uint64 { return snapshot(t, st.Open(t, nil)).Serial }
	r := Record(0, "serial")
	steps := []struct {
		name string
		do   func() error
		want uint64
	}{
		{"put new", func() error { return b.Put(ctx(t), r) }, 1},
		{"put same", func() error { return b.Put(ctx(t), Record(0, "serial")) }, 1},
		{"put changed", func() error { c := Record(0, "serial"); c.Generation = 2; return b.Put(ctx(t), c) }, 2},
		{"delete absent", func() error { return b.Delete(ctx(t), "sandbox.other") }, 2},
		{"delete", func() error { return b.Delete(ctx(t), r.Address) }, 3},
		{"delete again", func() error { return b.Delete(ctx(t), r.Address) }, 3},
	}
	for _, s := range steps {
		must(t, s.do())
		if got := serial(); got != s.want {
			t.Fatalf("after %s: serial %d, want %d", s.name, got, s.want)
		}
	}
}

func testLineage(t *testing.T, st State) {
	b := st.Open(t, nil)
	l1, err := b.EnsureLineage(ctx(t))
	must(t, err)
	if l1 == "" {
		t.Fatal("EnsureLineage returned no lineage")
	}
	l2, err := st.Open(t, nil).EnsureLineage(ctx(t))
	must(t, err)
	if l1 != l2 {
		t.Fatalf("second EnsureLineage = %s, first %s", l2, l1)
	}
	snap := snapshot(t, b)
	if snap.Lineage != l1 || snap.Serial != 0 {
		t.Fatalf("after EnsureLineage: lineage %s serial %d", snap.Lineage, snap.Serial)
	}
	must(t, b.ExpectLineage(ctx(t), l1, 0))
	must(t, b.Put(ctx(t), Record(0, "lin")))
	var stale *state.StaleError
	if err := st.Open(t, nil).ExpectLineage(ctx(t), l1, 0); !errors.As(err, &stale) {
		t.Fatalf("ExpectLineage at an old serial = %v, want *StaleError", err)
	}
	if err := st.Open(t, nil).ExpectLineage(ctx(t), "other", 1); !errors.As(err, &stale) {
		t.Fatalf("ExpectLineage of another lineage = %v, want *StaleError", err)
	}
}

func testLineageReplaced(t *testing.T, st State) {
	b := st.Open(t, nil)
	must(t, b.Put(ctx(t), Record(0, "rep")))
	st.Reset(t)
	must(t, st.Open(t, nil).Put(ctx(t), Record(1, "rep")))
	var le *state.LineageError
	if err := b.Put(ctx(t), Record(2, "rep")); !errors.As(err, &le) {
		t.Fatalf("Put into a replaced state = %v, want *LineageError", err)
	}
	if _, err := b.EnsureLineage(ctx(t)); !errors.As(err, &le) {
		t.Fatalf("EnsureLineage of a replaced state = %v, want *LineageError", err)
	}
	if got, _ := st.Open(t, nil).Get(ctx(t), Record(2, "rep").Address); got != nil {
		t.Fatal("the refused record was written")
	}
}

func checkLocked(t *testing.T, err error, addr, op string) {
	t.Helper()
	var le *state.LockedError
	if !errors.As(err, &le) {
		t.Fatalf("lock = %v, want *LockedError", err)
	}
	host, _ := os.Hostname()
	h := le.Holder
	if le.Address != addr || h.PID != os.Getpid() || h.Operation != op || h.Host != host || h.Since.IsZero() {
		t.Fatalf("LockedError = %+v (holder %+v), want address %q, pid %d, host %s, operation %q", le, h, addr, os.Getpid(), host, op)
	}
}

func testStateLock(t *testing.T, st State) {
	a, b := st.Open(t, nil), st.Open(t, nil)
	unlock, err := a.Lock(ctx(t), "apply", 0)
	must(t, err)
	_, err = b.Lock(ctx(t), "plan", 0)
	checkLocked(t, err, "", "apply")
	// The state lock does not stop reads or record writes.
	must(t, b.Put(ctx(t), Record(0, "lock")))
	must(t, unlock())
	must(t, unlock()) // safe twice
	unlock, err = b.Lock(ctx(t), "plan", 0)
	must(t, err)
	must(t, unlock())
}

func testInstanceLocks(t *testing.T, st State) {
	a, b := st.Open(t, nil), st.Open(t, nil)
	x, y := `sandbox.agent["x y"]`, `sandbox.agent["y"]`
	ux, err := a.LockInstance(ctx(t), x, "request", 0)
	must(t, err)
	defer ux()
	_, err = b.LockInstance(ctx(t), x, "apply", 0)
	checkLocked(t, err, x, "request")
	// Within one value too: a second holder of the same key waits.
	_, err = a.LockInstance(ctx(t), x, "release", 0)
	checkLocked(t, err, x, "request")
	uy, err := b.LockInstance(ctx(t), y, "request", 0)
	must(t, err)
	us, err := b.Lock(ctx(t), "apply", 0)
	must(t, err)
	must(t, errors.Join(uy(), us(), ux()))
	u, err := b.LockInstance(ctx(t), x, "apply", 0)
	must(t, err)
	must(t, u())
	if _, err := a.LockInstance(ctx(t), "", "apply", 0); err == nil {
		t.Fatal("lock of an empty address succeeded")
	}
}

func testLockWait(t *testing.T, st State) {
	a, b := st.Open(t, nil), st.Open(t, nil)
	unlock, err := a.LockInstance(ctx(t), "sandbox.w", "request", 0)
	must(t, err)
	go func() {
		time.Sleep(150 * time.Millisecond)
		_ = unlock()
	}()
	u, err := b.LockInstance(ctx(t), "sandbox.w", "request", 30*time.Second)
	must(t, err)
	must(t, u())
	// A cancelled context ends the wait with a LockedError too.
	u2, err := a.Lock(ctx(t), "apply", 0)
	must(t, err)
	defer u2()
	c, cancel := context.WithTimeout(ctx(t), 100*time.Millisecond)
	defer cancel()
	_, err = b.Lock(c, "plan", time.Minute)
	checkLocked(t, err, "", "apply")
}

func testBackup(t *testing.T, st State) {
	first := st.Open(t, nil)
	r0 := Record(0, "bk")
	must(t, first.Put(ctx(t), r0))
	second := st.Open(t, nil)
	changed := Record(0, "bk")
	changed.Generation = 7
	must(t, second.Put(ctx(t), changed))
	must(t, second.Put(ctx(t), Record(1, "bk")))
	must(t, second.Delete(ctx(t), "sandbox.none"))
	bk, err := second.Backup(ctx(t))
	must(t, err)
	if bk == nil {
		t.Fatal("no backup after a second write-set")
	}
	if diff := cmp.Diff(map[string]*state.Record{r0.Address: r0}, bk.Records); diff != "" {
		t.Fatalf("backup is not the state before the write-set (-want +got):\n%s", diff)
	}
	if bk.Serial != 1 {
		t.Fatalf("backup serial %d, want 1", bk.Serial)
	}
}

func testConcurrent(t *testing.T, st State) {
	const n = 12
	var wg sync.WaitGroup
	errs := make([]error, n)
	shared := st.Open(t, nil)
	for i := range n {
		wg.Go(func() {
			b := shared
			if i%2 == 1 {
				b = st.Open(t, nil)
			}
			errs[i] = b.Put(ctx(t), Record(i, "conc"))
		})
	}
	wg.Wait()
	must(t, errors.Join(errs...))
	snap := snapshot(t, st.Open(t, nil))
	if len(snap.Records) != n || snap.Serial != n {
		t.Fatalf("after %d concurrent puts: %d records, serial %d", n, len(snap.Records), snap.Serial)
	}
}

func checkNoSecrets(t *testing.T, st State, recs ...*state.Record) {
	t.Helper()
	dump := string(st.Dump(t))
	if dump == "" {
		t.Fatal("Dump is empty")
	}
	for _, p := range passwords(recs...) {
		if containsAny(dump, p) {
			t.Fatalf("password %s is stored in the clear", p)
		}
	}
}

func testSealed(t *testing.T, st State) {
	keys := keyring(t, Key(t))
	b := st.Open(t, keys)
	recs := []*state.Record{Record(0, "seal"), Record(1, "seal")}
	for _, r := range recs {
		must(t, b.Put(ctx(t), r))
	}
	// A second write-set, so that the backup or history holds records too.
	b2 := st.Open(t, keys)
	c := Record(0, "seal")
	c.Generation = 3
	must(t, b2.Put(ctx(t), c))
	checkNoSecrets(t, st, recs...)
	got, err := st.Open(t, keys).Get(ctx(t), recs[1].Address)
	must(t, err)
	if diff := cmp.Diff(recs[1], got); diff != "" {
		t.Fatalf("sealed record read back (-want +got):\n%s", diff)
	}
	snap := snapshot(t, st.Open(t, keys))
	if diff := cmp.Diff(c, snap.Records[c.Address]); diff != "" {
		t.Fatalf("sealed record in Snapshot (-want +got):\n%s", diff)
	}
	bk, err := b2.Backup(ctx(t))
	must(t, err)
	if bk == nil || bk.Records[recs[0].Address] == nil || bk.Records[recs[0].Address].Credentials["postgres"].Password != recs[0].Credentials["postgres"].Password {
		t.Fatalf("backup of a sealed state does not open: %+v", bk)
	}
}

func testWrongKey(t *testing.T, st State) {
	key := Key(t)
	must(t, st.Open(t, keyring(t, key)).Put(ctx(t), Record(0, "wk")))
	for _, tc := range []struct {
		name string
		keys *state.Keyring
	}{{"missing", nil}, {"wrong", keyring(t, Key(t))}} {
		t.Run(tc.name, func(t *testing.T) {
			b := st.Open(t, tc.keys)
			var ke *state.KeyError
			_, err := b.Get(ctx(t), Record(0, "wk").Address)
			if !errors.As(err, &ke) {
				t.Fatalf("Get = %v, want *KeyError", err)
			}
			if _, err := b.Snapshot(ctx(t)); !errors.As(err, &ke) {
				t.Fatalf("Snapshot = %v, want *KeyError", err)
			}
			if _, err := b.Inspect(ctx(t)); !errors.As(err, &ke) {
				t.Fatalf("Inspect = %v, want *KeyError (not a damaged record)", err)
			}
			if _, err := b.Rekey(ctx(t)); !errors.As(err, &ke) {
				t.Fatalf("Rekey = %v, want *KeyError", err)
			}
			if containsAny(err.Error(), key) {
				t.Fatal("the error shows the key")
			}
		})
	}
	// Nothing was lost: the right key still reads it.
	got, err := st.Open(t, keyring(t, key)).Get(ctx(t), Record(0, "wk").Address)
	must(t, err)
	if diff := cmp.Diff(Record(0, "wk"), got); diff != "" {
		t.Fatalf("after failed reads (-want +got):\n%s", diff)
	}
}

func testEncryptExisting(t *testing.T, st State) {
	plain := st.Open(t, nil)
	recs := []*state.Record{Record(0, "enc"), Record(1, "enc")}
	for _, r := range recs {
		must(t, plain.Put(ctx(t), r))
	}
	// A second write-set in the clear, so backups/history hold them too.
	c := Record(0, "enc")
	c.Generation = 2
	must(t, st.Open(t, nil).Put(ctx(t), c))
	if !containsAny(string(st.Dump(t)), recs[1].Credentials["redis"].Password.Reveal()) {
		t.Fatal("test is broken: the clear state does not hold the password")
	}
	keys := keyring(t, Key(t))
	// A key set before rekey still reads records in the clear.
	if _, err := st.Open(t, keys).Snapshot(ctx(t)); err != nil {
		t.Fatal(err)
	}
	n, err := st.Open(t, keys).Rekey(ctx(t))
	must(t, err)
	if n != 2 {
		t.Fatalf("Rekey rewrote %d records, want 2", n)
	}
	checkNoSecrets(t, st, recs...)
	if n, err := st.Open(t, keys).Rekey(ctx(t)); err != nil || n != 0 {
		t.Fatalf("second Rekey = %d, %v; want 0, nil", n, err)
	}
	got, err := st.Open(t, keys).Get(ctx(t), recs[1].Address)
	must(t, err)
	if diff := cmp.Diff(recs[1], got); diff != "" {
		t.Fatalf("after Rekey (-want +got):\n%s", diff)
	}
	var ke *state.KeyError
	if _, err := st.Open(t, nil).Get(ctx(t), recs[1].Address); !errors.As(err, &ke) {
		t.Fatalf("Get without key after Rekey = %v, want *KeyError", err)
	}
}

func testRotate(t *testing.T, st State) {
	k1, k2 := Key(t), Key(t)
	r := Record(0, "rot")
	must(t, st.Open(t, keyring(t, k1)).Put(ctx(t), r))
	var ke *state.KeyError
	if _, err := st.Open(t, keyring(t, k2)).Get(ctx(t), r.Address); !errors.As(err, &ke) {
		t.Fatalf("Get with the new key before rekey = %v, want *KeyError", err)
	}
	n, err := st.Open(t, keyring(t, k2, k1)).Rekey(ctx(t))
	must(t, err)
	if n != 1 {
		t.Fatalf("Rekey rewrote %d records, want 1", n)
	}
	got, err := st.Open(t, keyring(t, k2)).Get(ctx(t), r.Address)
	must(t, err)
	if diff := cmp.Diff(r, got); diff != "" {
		t.Fatalf("after rotation (-want +got):\n%s", diff)
	}
	if _, err := st.Open(t, keyring(t, k1)).Get(ctx(t), r.Address); !errors.As(err, &ke) {
		t.Fatalf("Get with the old key after rotation = %v, want *KeyError", err)
	}
	// Decrypt: only an old key, no current one: back in the clear.
	n, err = st.Open(t, keyring(t, "", k2)).Rekey(ctx(t))
	must(t, err)
	if n != 1 {
		t.Fatalf("Rekey to the clear rewrote %d records, want 1", n)
	}
	got, err = st.Open(t, nil).Get(ctx(t), r.Address)
	must(t, err)
	if diff := cmp.Diff(r, got); diff != "" {
		t.Fatalf("after decrypting (-want +got):\n%s", diff)
	}
}

func testPassphrase(t *testing.T, st State) {
	phrase := "correct horse battery staple"
	r := Record(0, "phrase")
	must(t, st.Open(t, keyring(t, phrase)).Put(ctx(t), r))
	checkNoSecrets(t, st, r)
	got, err := st.Open(t, keyring(t, phrase)).Get(ctx(t), r.Address)
	must(t, err)
	if diff := cmp.Diff(r, got); diff != "" {
		t.Fatalf("passphrase-sealed record (-want +got):\n%s", diff)
	}
	var ke *state.KeyError
	if _, err := st.Open(t, keyring(t, "another passphrase, also long")).Get(ctx(t), r.Address); !errors.As(err, &ke) {
		t.Fatalf("Get with another passphrase = %v, want *KeyError", err)
	}
}

func testImport(t *testing.T, st State) {
	keys := keyring(t, Key(t))
	imp, ok := st.Open(t, keys).(state.Importer)
	if !ok {
		t.Fatal("the backend is not a state.Importer (state migrate needs one)")
	}
	src := &state.Snapshot{Lineage: "0b6c1d2e-1111-4222-8333-444455556666", Serial: 41,
		Records: map[string]*state.Record{Record(0, "imp").Address: Record(0, "imp"), Record(1, "imp").Address: Record(1, "imp")}}
	must(t, imp.Import(ctx(t), src))
	got := snapshot(t, st.Open(t, keys))
	if diff := cmp.Diff(src, got); diff != "" {
		t.Fatalf("imported state (-want +got):\n%s", diff)
	}
	checkNoSecrets(t, st, Record(0, "imp"), Record(1, "imp"))
	// The same lineage, moved on: imported again, a record gone.
	next := &state.Snapshot{Lineage: src.Lineage, Serial: 45, Records: map[string]*state.Record{Record(1, "imp").Address: Record(1, "imp")}}
	must(t, st.Open(t, keys).(state.Importer).Import(ctx(t), next))
	if diff := cmp.Diff(next, snapshot(t, st.Open(t, keys))); diff != "" {
		t.Fatalf("re-imported state (-want +got):\n%s", diff)
	}
	var ie *state.ImportError
	for _, bad := range []*state.Snapshot{
		{Lineage: "other-lineage", Serial: 99, Records: map[string]*state.Record{}},
		{Lineage: src.Lineage, Serial: 44, Records: map[string]*state.Record{}},
	} {
		if err := st.Open(t, keys).(state.Importer).Import(ctx(t), bad); !errors.As(err, &ie) {
			t.Fatalf("Import of lineage %s serial %d = %v, want *state.ImportError", bad.Lineage, bad.Serial, err)
		}
	}
	if diff := cmp.Diff(next, snapshot(t, st.Open(t, keys))); diff != "" {
		t.Fatalf("a refused import changed the state (-want +got):\n%s", diff)
	}
	// The state is usable afterwards: a write moves the serial on.
	must(t, st.Open(t, keys).Put(ctx(t), Record(2, "imp")))
	if s := snapshot(t, st.Open(t, keys)).Serial; s != 46 {
		t.Fatalf("serial after a write on the imported state = %d, want 46", s)
	}
}

func testMove(t *testing.T, st State) {
	keys := keyring(t, Key(t))
	b := st.Open(t, keys)
	from := Record(0, "mv")
	must(t, b.Put(ctx(t), from))
	must(t, b.Put(ctx(t), Record(1, "mv")))
	before := snapshot(t, st.Open(t, keys)).Serial
	to := Record(7, "mv")
	must(t, st.Open(t, keys).Move(ctx(t), from.Address, to))
	snap := snapshot(t, st.Open(t, keys))
	if _, ok := snap.Records[from.Address]; ok {
		t.Fatal("the moved record is still at its old address")
	}
	if diff := cmp.Diff(to, snap.Records[to.Address]); diff != "" {
		t.Fatalf("moved record (-want +got):\n%s", diff)
	}
	if len(snap.Records) != 2 || snap.Serial <= before {
		t.Fatalf("after Move: %d records, serial %d (was %d)", len(snap.Records), snap.Serial, before)
	}
	checkNoSecrets(t, st, to)
}

// Addresses lists by prefix, in byte order, and follows writes.
func testAddresses(t *testing.T, st State) {
	b := st.Open(t, nil)
	got, err := b.Addresses(ctx(t), "")
	must(t, err)
	if len(got) != 0 {
		t.Fatalf("Addresses of an empty state: %q", got)
	}
	for _, a := range []string{`sandbox.warm["~pool-b"]`, `sandbox.warm["job"]`, `sandbox.warm["~pool-a"]`, `sandbox.warmer["~pool-c"]`, `sandbox.app`} {
		r := Record(0, "addr")
		r.Address = a
		must(t, b.Put(ctx(t), r))
	}
	got, err = st.Open(t, nil).Addresses(ctx(t), `sandbox.warm["~pool-`)
	must(t, err)
	if want := []string{`sandbox.warm["~pool-a"]`, `sandbox.warm["~pool-b"]`}; !cmp.Equal(got, want) {
		t.Fatalf("Addresses by prefix: %q, want %q", got, want)
	}
	got, err = b.Addresses(ctx(t), "")
	must(t, err)
	if len(got) != 5 || got[0] != "sandbox.app" {
		t.Fatalf("all addresses: %q", got)
	}
	must(t, b.Delete(ctx(t), `sandbox.warm["~pool-a"]`))
	got, err = b.Addresses(ctx(t), `sandbox.warm["~pool-`)
	must(t, err)
	if want := []string{`sandbox.warm["~pool-b"]`}; !cmp.Equal(got, want) {
		t.Fatalf("Addresses after a delete: %q, want %q", got, want)
	}
}
