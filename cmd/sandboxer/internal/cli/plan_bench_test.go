package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
)

// BenchmarkPlan1000 is the whole `plan --refresh=false` command: decode a
// configuration of 1,000 sandboxes in 20 projects, read a state holding
// 1,000 instances, build and render the plan. "blocks" writes 1,000
// sandbox blocks (110 KB of HCL: the parser's worst case); "for_each"
// declares the same 1,000 instances as 20 blocks of 50 keys each.
func BenchmarkPlan1000(b *testing.B) {
	b.Run("blocks", func(b *testing.B) { benchPlan1000(b, blocksConfig(), blockAddr) })
	b.Run("for_each", func(b *testing.B) { benchPlan1000(b, forEachConfig(), forEachAddr) })
	b.Run("empty_state_json", benchPlanEmptyJSON)
}

// benchPlanEmptyJSON is, in process, what scripts/benchplan times as a
// whole process: `plan --refresh=false --json` of the 1,000 blocks with
// no state file, so every sandbox is created.
func benchPlanEmptyJSON(b *testing.B) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(blocksConfig()), 0o644); err != nil {
		b.Fatal(err)
	}
	f := &Factory{
		IO:      IOStreams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard},
		Now:     time.Now,
		Catalog: config.DefaultCatalog(),
	}
	args := []string{"--chdir", dir, "plan", "--refresh=false", "--json"}
	var out, errOut bytes.Buffer
	f.IO.Out, f.IO.Err = &out, &errOut
	if code := Run(context.Background(), f, args); code != 0 {
		b.Fatalf("plan exited %d: %s", code, errOut.String())
	}
	if want := `"create": 1000,`; !strings.Contains(out.String(), want) {
		b.Fatalf("plan --json does not say %s:\n%s", want, out.String()[max(0, out.Len()-300):])
	}
	f.IO.Out = io.Discard
	b.ReportAllocs()
	for b.Loop() {
		errOut.Reset()
		if code := Run(context.Background(), f, args); code != 0 {
			b.Fatalf("plan exited %d: %s", code, errOut.String())
		}
	}
}

func projectsConfig() string {
	var hcl strings.Builder
	for p := range 20 {
		fmt.Fprintf(&hcl, "project \"p%02d\" {\n  services = [\"postgres\", \"redis\"]\n  extensions = { postgres = [\"vector\"] }\n}\n\n", p)
	}
	return hcl.String()
}

func blocksConfig() string {
	var hcl strings.Builder
	hcl.WriteString(projectsConfig())
	for i := range 1000 {
		ext := `{ postgres = ["pg_trgm"] }`
		if i%50%4 == 0 {
			ext = `{ redis = ["search"] }`
		}
		fmt.Fprintf(&hcl, "sandbox \"s%04d\" {\n  project    = project.p%02d\n  extensions = %s\n  ttl        = \"4h\"\n}\n\n", i, i%20, ext)
	}
	return hcl.String()
}

func forEachConfig() string {
	var keys strings.Builder
	for k := range 50 {
		kind := "trgm"
		if k%4 == 0 {
			kind = "search"
		}
		fmt.Fprintf(&keys, "    k%02d = %q\n", k, kind)
	}
	var hcl strings.Builder
	hcl.WriteString(projectsConfig())
	for p := range 20 {
		fmt.Fprintf(&hcl, `sandbox "s%02d" {
  for_each = {
%s  }
  project    = project.p%02d
  extensions = each.value == "search" ? { redis = ["search"] } : { postgres = ["pg_trgm"] }
  ttl        = "4h"
}

`, p, keys.String(), p)
	}
	return hcl.String()
}

func blockAddr(i int) string { return fmt.Sprintf("sandbox.s%04d", i) }

func forEachAddr(i int) string { return fmt.Sprintf("sandbox.s%02d[\"k%02d\"]", i/50, i%50) }

func benchPlan1000(b *testing.B, hcl string, addr func(int) string) {
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(hcl), 0o644); err != nil {
		b.Fatal(err)
	}
	store := state.Open(filepath.Join(dir, ".sandboxer", "state.db"))
	ctx := context.Background()
	now := time.Now().UTC()
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
		if err := store.Put(ctx, rec); err != nil {
			b.Fatal(err)
		}
	}
	f := &Factory{
		IO:      IOStreams{In: strings.NewReader(""), Out: io.Discard, Err: io.Discard},
		Now:     time.Now,
		Catalog: config.DefaultCatalog(),
		Global:  GlobalOptions{Chdir: dir},
	}
	// Both layouts must plan the same thing: the quarter that asks for
	// redis search is replaced, the rest is reused.
	var out, errOut bytes.Buffer
	f.IO.Out, f.IO.Err = &out, &errOut
	if code := Run(ctx, f, []string{"--chdir", dir, "plan", "--refresh=false"}); code != 0 {
		b.Fatalf("plan exited %d: %s", code, errOut.String())
	}
	if want := "Plan: 0 to create, 260 to replace, 0 to destroy, 740 reused."; !strings.Contains(out.String(), want) {
		b.Fatalf("plan summary is not %q:\n%s", want, out.String()[max(0, out.Len()-300):])
	}
	f.IO.Out = io.Discard
	b.ReportAllocs()
	for b.Loop() {
		var errBuf bytes.Buffer
		f.IO.Err = &errBuf
		if code := Run(ctx, f, []string{"--chdir", dir, "plan", "--refresh=false"}); code != 0 {
			b.Fatalf("plan exited %d: %s", code, errBuf.String())
		}
	}
}
