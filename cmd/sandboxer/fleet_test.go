package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/internal/testenv"
)

// Tests of the way a fleet starts: many processes at once on one engine
// and one fresh state, each with its own key. Every process that finds no
// lineage network makes one; before the engine lock (providers/docker
// enginelock.go) several were made with one name and every container start
// by that name failed as ambiguous.

const fleetConfig = `
provider "docker" {
  image "postgres" { ref = "sandboxer.local/postgres:17" }
  image "redis"    { ref = "sandboxer.local/redis:7" }
}

project "agents" {
  services = ["redis"]
}

sandbox "agent" {
  project   = project.agents
  on_demand = true
  ttl       = "10m"
}
`

// fleetDir is a fresh state directory with the fleet configuration, whose
// lineage's resources are removed when the test ends, whatever happened.
func fleetDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	writeConfig(t, dir, fleetConfig)
	cleanupLineage(t, dir)
	return dir
}

// lineageNetworks counts the engine's networks of the state in dir.
func lineageNetworks(t *testing.T, dir string) int {
	t.Helper()
	lineage, _ := stateOf(t, dir)
	out, err := exec.Command("docker", "network", "ls", "-q",
		"--filter", "label=dev.sandboxer.lineage="+lineage,
		"--filter", "label=dev.sandboxer.network=lineage").Output()
	if err != nil {
		t.Fatalf("docker network ls: %v", err)
	}
	return len(strings.Fields(string(out)))
}

// lineageVolumes counts the engine's volumes of the state in dir: data
// directories, and engine locks a process left behind.
func lineageVolumes(t *testing.T, dir string) int {
	t.Helper()
	lineage, _ := stateOf(t, dir)
	out, err := exec.Command("docker", "volume", "ls", "-q", "--filter", "label=dev.sandboxer.lineage="+lineage).Output()
	if err != nil {
		t.Fatalf("docker volume ls: %v", err)
	}
	return len(strings.Fields(string(out)))
}

// concurrently runs n sandboxer commands at the same moment and returns
// each one's failure (nil for success).
func concurrently(t *testing.T, dir string, args func(i int) []string, n int) []error {
	t.Helper()
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := sandboxerCmd(t, dir, args(i)...)
			<-start
			if out, err := cmd.CombinedOutput(); err != nil {
				errs[i] = fmt.Errorf("sandboxer %s: %v\n%s", strings.Join(args(i), " "), err, out)
			}
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

func TestFleetFirstBurstOnFreshState(t *testing.T) {
	testenv.RequireDocker(t)
	dir := fleetDir(t)
	const n = 10
	errs := concurrently(t, dir, func(i int) []string {
		return []string{"request", "sandbox.agent", "--key", fmt.Sprintf("k%d", i), "--json"}
	}, n)
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	_, addrs := stateOf(t, dir)
	if len(addrs) != n {
		t.Errorf("state holds %d instances, want %d: %v", len(addrs), n, addrs)
	}
	if got := lineageNetworks(t, dir); got != 1 {
		t.Errorf("the lineage has %d networks, want 1", got)
	}
	if got := lineageVolumes(t, dir); got != 0 {
		t.Errorf("the lineage has %d volumes (a lock left behind?), want 0", got)
	}
	errs = concurrently(t, dir, func(i int) []string {
		return []string{"release", "sandbox.agent", "--key", fmt.Sprintf("k%d", i)}
	}, n)
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
	lineage, _ := stateOf(t, dir)
	if left := labelled(t, lineage); left != 0 {
		t.Errorf("%d containers or networks left labelled after every release", left)
	}
}

func TestFleetServeReplicasShareOneState(t *testing.T) {
	testenv.RequireDocker(t)
	dir := fleetDir(t)
	const token = "fleet-test-token-4c1e"
	var addrs []string
	for i := range 3 {
		addrFile := filepath.Join(dir, fmt.Sprintf("addr%d.txt", i))
		cmd := sandboxerCmd(t, dir, "serve", "--listen", "127.0.0.1:0", "--addr-file", addrFile, "--reap-interval", "0")
		cmd.Env = append(cmd.Env, "SANDBOXER_API_TOKEN="+token)
		var logs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Signal(os.Interrupt)
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case <-done:
			case <-time.After(30 * time.Second):
				_ = cmd.Process.Kill()
				<-done
			}
			if t.Failed() {
				t.Logf("serve %d log:\n%s", i, logs.String())
			}
		})
		addrs = append(addrs, waitAddrFile(t, addrFile))
	}

	const calls, keys = 30, 5
	type result struct {
		status int
		body   string
	}
	results := make([]result, calls)
	start := make(chan struct{})
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 4 * time.Minute}
	for i := range calls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			body := fmt.Sprintf(`{"address": "sandbox.agent", "key": "k%d"}`, i%keys)
			req, _ := http.NewRequest(http.MethodPost, "http://"+addrs[i%len(addrs)]+"/v1/request", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			<-start
			resp, err := client.Do(req)
			if err != nil {
				results[i] = result{body: err.Error()}
				return
			}
			defer resp.Body.Close()
			var b bytes.Buffer
			_, _ = b.ReadFrom(resp.Body)
			results[i] = result{status: resp.StatusCode, body: b.String()}
		}()
	}
	close(start)
	wg.Wait()
	ok := 0
	gens := map[string]map[float64]bool{} // key → generations handed out
	for i, r := range results {
		if r.status != http.StatusOK {
			t.Errorf("call %d (key k%d): status %d: %s", i, i%keys, r.status, r.body)
			continue
		}
		ok++
		var v struct {
			Address    string  `json:"address"`
			Generation float64 `json:"generation"`
		}
		if err := json.Unmarshal([]byte(r.body), &v); err != nil {
			t.Errorf("call %d: %v: %s", i, err, r.body)
			continue
		}
		if gens[v.Address] == nil {
			gens[v.Address] = map[float64]bool{}
		}
		gens[v.Address][v.Generation] = true
	}
	t.Logf("%d of %d calls succeeded", ok, calls)
	_, inState := stateOf(t, dir)
	if len(inState) != keys {
		t.Errorf("state holds %d instances, want %d: %v", len(inState), keys, inState)
	}
	for addr, g := range gens {
		if len(g) != 1 {
			t.Errorf("%s was handed out at %d generations, want 1 (one provision, then reuse)", addr, len(g))
		}
	}
	if got := lineageNetworks(t, dir); got != 1 {
		t.Errorf("the lineage has %d networks, want 1", got)
	}
	for k := range keys {
		mustSandboxer(t, dir, "release", "sandbox.agent", "--key", fmt.Sprintf("k%d", k))
	}
}

// A release of the lineage's last instance removes the network just as a
// request of another key needs it. Whichever wins, the request succeeds,
// and nothing is stranded: after its release, nothing is labelled.
func TestFleetReleaseOfLastRacesRequest(t *testing.T) {
	testenv.RequireDocker(t)
	dir := fleetDir(t)
	const rounds = 3
	for r := range rounds {
		last, next := fmt.Sprintf("r%d", r), fmt.Sprintf("r%d", r+1)
		if r == 0 {
			mustSandboxer(t, dir, "request", "sandbox.agent", "--key", last)
		}
		errs := concurrently(t, dir, func(i int) []string {
			if i == 0 {
				return []string{"release", "sandbox.agent", "--key", last}
			}
			return []string{"request", "sandbox.agent", "--key", next, "--json"}
		}, 2)
		for _, err := range errs {
			if err != nil {
				t.Fatalf("round %d: %v", r, err)
			}
		}
		_, addrs := stateOf(t, dir)
		if want := fmt.Sprintf(`sandbox.agent["%s"]`, next); len(addrs) != 1 || addrs[0] != want {
			t.Fatalf("round %d: state holds %v, want only %s", r, addrs, want)
		}
		if got := lineageNetworks(t, dir); got != 1 {
			t.Errorf("round %d: the lineage has %d networks, want 1", r, got)
		}
		// The instance that won the race works: its container runs.
		lineage, _ := stateOf(t, dir)
		out, err := exec.Command("docker", "ps", "-q", "--filter", "label=dev.sandboxer.lineage="+lineage,
			"--filter", "status=running").Output()
		if err != nil || len(strings.Fields(string(out))) != 1 {
			t.Errorf("round %d: running containers of the lineage: %q (%v), want 1", r, out, err)
		}
	}
	mustSandboxer(t, dir, "release", "sandbox.agent", "--key", fmt.Sprintf("r%d", rounds))
	lineage, _ := stateOf(t, dir)
	if left := labelled(t, lineage); left != 0 {
		t.Errorf("%d containers or networks left labelled", left)
	}
}

// waitAddrFile waits for serve to write the address it listens on.
func waitAddrFile(t *testing.T, path string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for {
		if b, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(b)) > 0 {
			return strings.TrimSpace(string(b))
		}
		select {
		case <-ctx.Done():
			t.Fatalf("serve wrote no %s within a minute", path)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Eight processes claim at once from a pool of three: the per-instance
// locks are file locks shared across processes, so exactly three claim
// a member, each a different one, and the other five provision cold.
func TestFleetPoolClaimsAcrossProcesses(t *testing.T) {
	testenv.RequireDocker(t)
	dir := t.TempDir()
	writeConfig(t, dir, strings.Replace(fleetConfig, `ttl       = "10m"`, "ttl       = \"10m\"\n  pool {\n    size = 3\n  }", 1))
	cleanupLineage(t, dir)
	mustSandboxer(t, dir, "pool", "fill", "sandbox.agent")
	const n = 8
	outs := make([]string, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := sandboxerCmd(t, dir, "request", "sandbox.agent", "--key", fmt.Sprintf("p%d", i), "--json")
			var out bytes.Buffer
			cmd.Stdout = &out
			<-start
			if err := cmd.Run(); err != nil {
				t.Errorf("request p%d: %v", i, err)
			}
			outs[i] = out.String()
		}()
	}
	close(start)
	wg.Wait()
	fromPool := 0
	passwords := map[string]bool{}
	for i, o := range outs {
		var s struct {
			FromPool bool              `json:"from_pool"`
			Env      map[string]string `json:"env"`
		}
		if err := json.Unmarshal([]byte(o), &s); err != nil {
			t.Fatalf("request p%d: %v: %s", i, err, o)
		}
		if s.FromPool {
			fromPool++
		}
		pw := s.Env["SANDBOXER_REDIS_PASSWORD"]
		if pw == "" || passwords[pw] {
			t.Errorf("request p%d: password empty or handed out twice", i)
		}
		passwords[pw] = true
	}
	if fromPool != 3 {
		t.Errorf("%d of %d requests claimed from a pool of 3, want 3", fromPool, n)
	}
	_, addrs := stateOf(t, dir)
	if len(addrs) != n {
		t.Errorf("state holds %d instances, want %d (no member left, none given twice): %v", len(addrs), n, addrs)
	}
	for i := range n {
		mustSandboxer(t, dir, "release", "sandbox.agent", "--key", fmt.Sprintf("p%d", i))
	}
	lineage, _ := stateOf(t, dir)
	if left := labelled(t, lineage); left != 0 {
		t.Errorf("%d containers or networks left labelled", left)
	}
}
