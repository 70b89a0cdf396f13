package main

import (
	"context"
	"fmt"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/internal/testenv"
	"github.com/sandboxer/sandboxer/state"
	"github.com/sandboxer/sandboxer/state/pgstate"
)

// Release-on-disconnect across processes: one `sandboxer mcp` per agent,
// one configuration and state, every agent on the same key. The instance
// survives every holder but the last, whether a holder leaves (stdin
// closed) or is killed with SIGKILL, and goes with the last.
func TestMCPHoldersAcrossProcesses(t *testing.T) {
	testenv.RequireDocker(t)
	t.Run("file", func(t *testing.T) {
		dir := t.TempDir()
		cleanupLineage(t, dir)
		testHolders(t, dir, func() (string, []string) { return stateOf(t, dir) })
	})
	// The same with the state in PostgreSQL (a schema of the test's own),
	// as agents on several machines would share it.
	t.Run("postgres", func(t *testing.T) {
		pgRequired(t)
		base := os.Getenv(testenv.PostgresURLEnv)
		if base == "" {
			t.Skipf("%s is not set", testenv.PostgresURLEnv)
		}
		ctx := context.Background()
		schema := "sbxholders_" + strings.ToLower(strings.ReplaceAll(state.NewLineage(), "-", ""))[:16]
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		if _, err := c.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
			t.Fatal(err)
		}
		u, err := url.Parse(base)
		if err != nil {
			t.Fatal(err)
		}
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		t.Setenv("SANDBOXER_BACKEND_URL", u.String())
		b := pgstate.OpenURL(u.String(), nil)
		snapOf := func() (string, []string) {
			snap, err := b.Snapshot(ctx)
			if err != nil {
				t.Fatal(err)
			}
			addrs := slices.Sorted(maps.Keys(snap.Records))
			return snap.Lineage, addrs
		}
		dir := t.TempDir()
		t.Cleanup(func() {
			if lineage, _ := snapOf(); lineage != "" {
				removeLabelled(lineage)
			}
			b.Close()
			_, _ = c.Exec(context.Background(), "DROP SCHEMA "+schema+" CASCADE")
		})
		testHolders(t, dir, snapOf)
	})
}

func testHolders(t *testing.T, dir string, stateOf func() (string, []string)) {
	writeConfig(t, dir, mcpConfig)
	const n = 8
	start := time.Now()
	agents := make([]*rawMCP, n)
	for i := range agents {
		agents[i] = startRawMCP(t, dir, "--release-on-disconnect")
	}
	var wg sync.WaitGroup
	got := make([]api.Sandbox, n)
	msgs := make([]string, n)
	for i, a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msgs[i] = a.tool("request_sandbox", map[string]any{"address": "sandbox.agent", "key": "shared"}, &got[i])
		}()
	}
	wg.Wait()
	fresh := 0
	for i := range agents {
		if msgs[i] != "" {
			t.Fatalf("agent %d: request_sandbox: %s", i, msgs[i])
		}
		if !got[i].Reused {
			fresh++
		}
	}
	if fresh != 1 {
		t.Fatalf("%d of %d requests provisioned, want 1 (the others reuse it)", fresh, n)
	}
	t.Logf("%d agents hold sandbox.agent[\"shared\"] after %s", n, time.Since(start).Round(time.Millisecond))
	lineage, _ := stateOf()
	url := got[0].Env["SANDBOXER_POSTGRES_URL"]

	alive := func(when string) {
		t.Helper()
		if _, addrs := stateOf(); strings.Join(addrs, " ") != `sandbox.agent["shared"]` {
			t.Fatalf("%s: state holds %v, want the shared instance", when, addrs)
		}
		if out := psql(t, url, "SELECT 1"); out != "1" {
			t.Fatalf("%s: psql: %q", when, out)
		}
	}
	// Holders leave one by one: every other one hangs up, the rest are
	// killed (no chance to say anything).
	for i := 0; i < n-1; i++ {
		a := agents[i]
		how := "hung up"
		if i%2 == 1 {
			a.kill9()
			how = "was killed"
		} else {
			a.hangUp()
		}
		_ = a.wait(3 * time.Minute)
		alive(fmt.Sprintf("after agent %d %s (%d holders left)", i, how, n-1-i))
	}
	// One of the survivors' view: still listed.
	var list api.SandboxList
	if msg := agents[n-1].tool("list_sandboxes", map[string]any{}, &list); msg != "" || len(list.Sandboxes) != 1 {
		t.Fatalf("list_sandboxes: %q %+v", msg, list)
	}
	last := time.Now()
	agents[n-1].hangUp()
	if err := agents[n-1].wait(3 * time.Minute); err != nil {
		t.Fatalf("the last agent's mcp: %v", err)
	}
	t.Logf("the last holder's release took %s", time.Since(last).Round(time.Millisecond))
	if _, addrs := stateOf(); len(addrs) != 0 {
		t.Errorf("after the last holder left, state holds %v", addrs)
	}
	if c := labelled(t, lineage); c != 0 {
		t.Errorf("after the last holder left, %d labelled resources remain", c)
	}
}

// A harness that dies (SIGKILL: its pipes to the server close at once,
// stderr included) while its session holds several instances: the server
// survives the broken pipes, releases them all at once, and exits;
// nothing is left. Then a server killed itself right after its client:
// whatever it did not release, the next reap does.
func TestMCPClientKilled(t *testing.T) {
	testenv.RequireDocker(t)
	for _, held := range []int{2, 4} {
		t.Run(fmt.Sprintf("%d held", held), func(t *testing.T) {
			dir := t.TempDir()
			writeConfig(t, dir, mcpConfig)
			cleanupLineage(t, dir)
			m := startRawMCP(t, dir, "--release-on-disconnect")
			var wg sync.WaitGroup
			msgs := make([]string, held)
			var mu sync.Mutex
			for i := range held {
				wg.Add(1)
				go func() {
					defer wg.Done()
					mu.Lock() // one writer and reader of the pipe at a time
					defer mu.Unlock()
					msgs[i] = m.tool("request_sandbox", map[string]any{"address": "sandbox.agent", "key": fmt.Sprintf("k%d", i)}, nil)
				}()
			}
			wg.Wait()
			for i, msg := range msgs {
				if msg != "" {
					t.Fatalf("request %d: %s", i, msg)
				}
			}
			lineage, addrs := stateOf(t, dir)
			if len(addrs) != held {
				t.Fatalf("state holds %v, want %d instances", addrs, held)
			}
			start := time.Now()
			m.die()
			err := m.wait(3 * time.Minute)
			t.Logf("the server released %d instances and exited in %s (%v)", held, time.Since(start).Round(time.Millisecond), err)
			if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() < 0 {
				t.Errorf("the server died of a signal: %v", err)
			}
			if _, addrs := stateOf(t, dir); len(addrs) != 0 {
				t.Errorf("after the client died, state holds %v", addrs)
			}
			if c := labelled(t, lineage); c != 0 {
				t.Errorf("after the client died, %d labelled resources remain", c)
			}
		})
	}
	t.Run("server killed too", func(t *testing.T) {
		dir := t.TempDir()
		writeConfig(t, dir, mcpConfig)
		cleanupLineage(t, dir)
		m := startRawMCP(t, dir, "--release-on-disconnect")
		for i := range 2 {
			if msg := m.tool("request_sandbox", map[string]any{"address": "sandbox.agent", "key": fmt.Sprintf("k%d", i)}, nil); msg != "" {
				t.Fatal(msg)
			}
		}
		lineage, _ := stateOf(t, dir)
		m.die()
		m.kill9()
		_ = m.wait(time.Minute)
		out, err := sandboxerCmd(t, dir, "reap").CombinedOutput()
		if err != nil {
			t.Fatalf("reap: %v\n%s", err, out)
		}
		t.Logf("reap:\n%s", out)
		if _, addrs := stateOf(t, dir); len(addrs) != 0 {
			t.Errorf("after reap, state holds %v", addrs)
		}
		if c := labelled(t, lineage); c != 0 {
			t.Errorf("after reap, %d labelled resources remain", c)
		}
	})
}

// A harness that shuts its servers down as a common MCP client library
// does: stdin closed, 2 s, SIGTERM, 3 s, SIGKILL — several servers at
// once, each holding an instance. Whatever a server released in time is
// gone; whatever it did not, the next reap releases: nothing is left.
func TestMCPHarnessShutdown(t *testing.T) {
	testenv.RequireDocker(t)
	const n = 4
	dir := t.TempDir()
	writeConfig(t, dir, mcpConfig)
	cleanupLineage(t, dir)
	servers := make([]*rawMCP, n)
	for i := range servers {
		servers[i] = startRawMCP(t, dir, "--release-on-disconnect")
	}
	var wg sync.WaitGroup
	msgs := make([]string, n)
	for i, m := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			msgs[i] = m.tool("request_sandbox", map[string]any{"address": "sandbox.agent", "key": fmt.Sprintf("h%d", i)}, nil)
		}()
	}
	wg.Wait()
	for i, msg := range msgs {
		if msg != "" {
			t.Fatalf("server %d: request_sandbox: %s", i, msg)
		}
	}
	lineage, _ := stateOf(t, dir)
	stopLoad := loadCores() // the releases run on a busy machine
	defer stopLoad()
	start := time.Now()
	for _, m := range servers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m.hangUp()
			select {
			case err := <-m.exited:
				m.exited <- err
				return
			case <-time.After(2 * time.Second):
			}
			_ = m.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case err := <-m.exited:
				m.exited <- err
				return
			case <-time.After(3 * time.Second):
			}
			m.kill9()
		}()
	}
	wg.Wait()
	for _, m := range servers {
		_ = m.wait(time.Minute)
	}
	stopLoad()
	_, left := stateOf(t, dir)
	t.Logf("after the harness's shutdown (%s): %d of %d instances left for reap", time.Since(start).Round(time.Millisecond), len(left), n)
	out, err := sandboxerCmd(t, dir, "reap").CombinedOutput()
	if err != nil {
		t.Fatalf("reap: %v\n%s", err, out)
	}
	t.Logf("reap:\n%s", out)
	if _, addrs := stateOf(t, dir); len(addrs) != 0 {
		t.Errorf("after reap, state holds %v", addrs)
	}
	if c := labelled(t, lineage); c != 0 {
		t.Errorf("after reap, %d labelled resources remain", c)
	}
}
