// Command benchpool measures warm-pool claims beside cold provisions:
// POST /v1/request to `sandboxer serve` (which keeps the pool full, so
// refills run while claims are measured), a whole `sandboxer request`
// process per claim (the pool topped up by `sandboxer pool fill` between
// claims, outside the timing), and a cold request of the same services
// through each. Every claim's latency includes the credential rotation
// (ALTER ROLE / ACL SETUSER) and recording; every claimed instance is
// released outside the timing so the engine never holds more than the
// pool plus one.
//
// With -runtime kubernetes the pool's members are pods on the cluster
// KUBECONFIG names (namespace: its context's); a claim there makes no
// request to the API server at all (rotation is over the services' own
// protocols, the move a state transaction).
//
// Usage: go run ./scripts/benchpool [-bin bin/sandboxer] [-n 200] [-cli 20] [-cold 5] [-size 10] [-services redis] [-runtime docker|kubernetes]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"
)

const token = "bench-only-token"

func main() {
	bin := flag.String("bin", "bin/sandboxer", "sandboxer binary")
	n := flag.Int("n", 200, "API claims to measure")
	nCLI := flag.Int("cli", 20, "CLI claims to measure")
	nCold := flag.Int("cold", 5, "cold requests to measure on each side")
	size := flag.Int("size", 10, "pool size")
	services := flag.String("services", "redis", "services of the pooled block")
	runtime := flag.String("runtime", "docker", "where the pool runs: docker or kubernetes")
	flag.Parse()
	if *runtime != "docker" && *runtime != "kubernetes" {
		check(fmt.Errorf("-runtime %q: docker or kubernetes", *runtime))
	}
	abs, err := filepath.Abs(*bin)
	check(err)
	dir, err := os.MkdirTemp("", "sbx-bench-pool-")
	check(err)
	defer os.RemoveAll(dir)
	var quoted []string
	for _, s := range strings.Split(*services, ",") {
		quoted = append(quoted, fmt.Sprintf("%q", strings.TrimSpace(s)))
	}
	cfg := fmt.Sprintf(`provider "%s" {
  image "postgres" { ref = "sandboxer.local/postgres:17" }
  image "redis"    { ref = "sandboxer.local/redis:7" }
  image "mysql"    { ref = "sandboxer.local/mysql:11.8" }
  image "valkey"   { ref = "sandboxer.local/valkey:8" }
}
project "bench" {
  services = [%s]
}
sandbox "warm" {
  project   = project.bench
  on_demand = true
  ttl       = "1h"
  pool {
    size = %d
  }
}
sandbox "cold" {
  project   = project.bench
  on_demand = true
  ttl       = "1h"
}
`, *runtime, strings.Join(quoted, ", "), *size)
	check(os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(cfg), 0o600))
	sbx := func(args ...string) ([]byte, error) {
		cmd := exec.Command(abs, append([]string{"--chdir", dir}, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("%v: %v: %s", args, err, stderr.String())
		}
		return out, nil
	}
	defer func() {
		if _, err := sbx("pool", "drain", "sandbox.warm"); err != nil {
			fmt.Fprintln(os.Stderr, "drain:", err)
		}
		// A drain leaves what the lineage's sandboxes shared (the
		// Kubernetes runtime's Service and NetworkPolicy) to the reaper.
		if _, err := sbx("reap"); err != nil {
			fmt.Fprintln(os.Stderr, "reap:", err)
		}
	}()
	ready := func() int {
		out, err := sbx("pool", "status", "sandbox.warm", "--json")
		check(err)
		var st struct {
			Ready int `json:"ready"`
		}
		check(json.Unmarshal(out, &st))
		return st.Ready
	}

	// API: serve fills the pool at start and after every claim.
	addrFile := filepath.Join(dir, "addr.txt")
	srv := exec.Command(abs, "--chdir", dir, "serve", "--listen", "127.0.0.1:0", "--addr-file", addrFile, "--reap-interval", "0")
	srv.Env = append(os.Environ(), "SANDBOXER_API_TOKEN="+token)
	check(srv.Start())
	stopServe := func() {
		_ = srv.Process.Signal(syscall.SIGTERM)
		_ = srv.Wait()
	}
	addr := waitAddr(addrFile)
	client := &http.Client{Timeout: 5 * time.Minute}
	post := func(path, body string) []byte {
		r, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://"+addr+path, strings.NewReader(body))
		check(err)
		r.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(r)
		check(err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		check(err)
		if resp.StatusCode != http.StatusOK {
			check(fmt.Errorf("API %s answered %s: %s", path, resp.Status, b))
		}
		return b
	}
	start := time.Now()
	waitReady(ready, *size)
	fmt.Printf("serve filled a pool of %d (%s on %s) in %s\n", *size, *services, *runtime, time.Since(start).Round(time.Millisecond))

	var apiCold []time.Duration
	for i := range *nCold {
		key := fmt.Sprintf("cold%d", i)
		t := time.Now()
		b := post("/v1/request", `{"address":"sandbox.cold","key":"`+key+`"}`)
		apiCold = append(apiCold, time.Since(t))
		mustPool(b, false)
		post("/v1/release", `{"address":"sandbox.cold","key":"`+key+`"}`)
	}
	var claims []time.Duration
	coldFallbacks := 0
	for i := range *n {
		// Claims come faster than refills only if the caller outruns the
		// engine; wait for a ready member so every sample is a claim.
		waitReady(ready, 1)
		key := fmt.Sprintf("api%d", i)
		t := time.Now()
		b := post("/v1/request", `{"address":"sandbox.warm","key":"`+key+`"}`)
		d := time.Since(t)
		if fromPool(b) {
			claims = append(claims, d)
		} else {
			coldFallbacks++
		}
		post("/v1/release", `{"address":"sandbox.warm","key":"`+key+`"}`)
	}
	stopServe()
	report("API POST /v1/request, cold (provision)", apiCold)
	report("API POST /v1/request, pool claim (refills running)", claims)
	if coldFallbacks > 0 {
		fmt.Printf("  %d of %d API requests found the pool empty and provisioned cold\n", coldFallbacks, *n)
	}

	// CLI: a whole process per call; pool fill tops up outside the timing.
	var cliCold, cliClaims []time.Duration
	for i := range *nCold {
		key := fmt.Sprintf("clicold%d", i)
		t := time.Now()
		out, err := sbx("request", "sandbox.cold", "--key", key, "--json")
		check(err)
		cliCold = append(cliCold, time.Since(t))
		mustPool(out, false)
		_, err = sbx("release", "sandbox.cold", "--key", key)
		check(err)
	}
	for i := range *nCLI {
		_, err := sbx("pool", "fill", "sandbox.warm")
		check(err)
		key := fmt.Sprintf("cli%d", i)
		t := time.Now()
		out, err := sbx("request", "sandbox.warm", "--key", key, "--json")
		check(err)
		cliClaims = append(cliClaims, time.Since(t))
		mustPool(out, true)
		_, err = sbx("release", "sandbox.warm", "--key", key)
		check(err)
	}
	report("CLI sandboxer request, cold (provision)", cliCold)
	report("CLI sandboxer request, pool claim", cliClaims)
}

func fromPool(out []byte) bool {
	var r struct {
		FromPool bool `json:"from_pool"`
	}
	check(json.Unmarshal(out, &r))
	return r.FromPool
}

func mustPool(out []byte, want bool) {
	if fromPool(out) != want {
		check(fmt.Errorf("from_pool is %v, want %v", !want, want))
	}
}

func waitReady(ready func() int, n int) {
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		if ready() >= n {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	check(fmt.Errorf("the pool did not reach %d ready members", n))
}

func waitAddr(path string) string {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && len(bytes.TrimSpace(b)) > 0 {
			return string(bytes.TrimSpace(b))
		}
		time.Sleep(20 * time.Millisecond)
	}
	check(fmt.Errorf("serve did not write %s", path))
	return ""
}

func report(what string, d []time.Duration) {
	if len(d) == 0 {
		fmt.Printf("%-55s n=0\n", what)
		return
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	pct := func(p float64) time.Duration {
		i := int(p*float64(len(d))+0.5) - 1
		return d[min(max(i, 0), len(d)-1)]
	}
	fmt.Printf("%-55s n=%d  p50 %7.1f ms  p99 %7.1f ms  max %7.1f ms\n", what, len(d),
		ms(pct(0.50)), ms(pct(0.99)), ms(d[len(d)-1]))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchpool:", err)
		os.Exit(1)
	}
}
