package cli

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/testenv"
	"github.com/sandboxer/sandboxer/state"
	"github.com/sandboxer/sandboxer/state/pgstate"
)

// BenchmarkPlan1000Backend is `plan --refresh=false` of 1,000 sandboxes
// (the for_each layout of BenchmarkPlan1000) with the state in the file
// and in PostgreSQL, each run a fresh Factory as a fresh process would
// have (the PostgreSQL run pays for its connections).
func BenchmarkPlan1000Backend(b *testing.B) {
	for _, kind := range []string{"bbolt", "pg"} {
		b.Run("backend="+kind, func(b *testing.B) {
			dir := b.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(forEachConfig()), 0o644); err != nil {
				b.Fatal(err)
			}
			args := []string{"--chdir", dir, "plan", "--refresh=false"}
			var imp state.Importer = state.Open(filepath.Join(dir, ".sandboxer", "state.db"))
			if kind == "pg" {
				u := testenv.PostgresSchema(b)
				db := pgstate.NewDB(u)
				be := pgstate.Open(db, nil)
				b.Cleanup(func() { be.Close(); db.Close() })
				imp = be
				args = append([]string{"--backend", u}, args...)
			}
			if err := imp.Import(context.Background(), plan1000Snapshot(forEachAddr)); err != nil {
				b.Fatal(err)
			}
			run := func() string {
				var out, errOut bytes.Buffer
				f := &Factory{
					IO:      IOStreams{In: strings.NewReader(""), Out: &out, Err: &errOut},
					Now:     time.Now,
					Catalog: config.DefaultCatalog(),
					Global:  GlobalOptions{Chdir: dir},
				}
				if code := Run(context.Background(), f, args); code != 0 {
					b.Fatalf("plan exited %d: %s", code, errOut.String())
				}
				return out.String()
			}
			if want := "Plan: 0 to create, 260 to replace, 0 to destroy, 740 reused."; !strings.Contains(run(), want) {
				b.Fatalf("plan summary is not %q", want)
			}
			b.ReportAllocs()
			for b.Loop() {
				run()
			}
		})
	}
}

// plan1000Snapshot is BenchmarkPlan1000's state as one snapshot.
func plan1000Snapshot(addr func(int) string) *state.Snapshot {
	now := time.Now().UTC()
	snap := &state.Snapshot{Lineage: state.NewLineage(), Serial: 1000, Records: map[string]*state.Record{}}
	for i := range 1000 {
		rec := &state.Record{
			Address: addr(i), Project: fmt.Sprintf("p%02d", i%20),
			Services: []string{"postgres", "redis"},
			Features: map[string][]string{"postgres": {"pg_trgm", "vector"}, "redis": {}},
			AvailableExtensions: map[string][]string{
				"postgres": {"citext", "hstore", "pg_trgm", "pgcrypto", "postgis", "uuid-ossp", "vector"},
				"redis":    {"search"}},
			Credentials: map[string]state.Credentials{
				"postgres": {Host: "127.0.0.1", Port: 40000 + i, User: "sandbox", Password: "p4ssw0rd-0123456789abcdef", Database: "app",
					AdminUser: "sbx_admin", AdminPassword: "adm1n-0123456789abcdef"},
				"redis": {Host: "127.0.0.1", Port: 50000 + i, User: "sandbox", Password: "p4ssw0rd-0123456789abcdef"}},
			Resources: state.Resources{Network: strings.Repeat("a", 64),
				Containers: map[string]string{"postgres": strings.Repeat("b", 64), "redis": strings.Repeat("c", 64)}},
			CreatedAt: now, ExpiresAt: now.Add(4 * time.Hour), Generation: 1,
		}
		snap.Records[rec.Address] = rec
	}
	return snap
}
