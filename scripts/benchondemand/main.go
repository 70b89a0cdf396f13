// Command benchondemand measures the latency of a cache-hit on-demand
// request, probe included (container inspect + PostgreSQL SELECT 1 + Redis
// AUTH/PING with the handed-out credentials), through the CLI (a whole
// `sandboxer request` process per call) and through `sandboxer serve`'s
// HTTP API (one keep-alive client), and prints p50/p99/max over N calls.
//
// With -runtime kubernetes the sandbox runs on the cluster KUBECONFIG
// names (the probe is then a pod get + the same protocol round trips at
// the pod IP).
//
// Usage: go run ./scripts/benchondemand [-bin bin/sandboxer] [-n 200] [-services postgres,redis] [-runtime docker|kubernetes]
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
	n := flag.Int("n", 200, "calls to measure for each side")
	services := flag.String("services", "postgres,redis", "services of the benchmarked sandbox")
	runtime := flag.String("runtime", "docker", "where the sandbox runs: docker or kubernetes")
	flag.Parse()
	abs, err := filepath.Abs(*bin)
	check(err)
	dir, err := os.MkdirTemp("", "sbx-bench-ondemand-")
	check(err)
	defer os.RemoveAll(dir)
	var quoted []string
	for _, s := range strings.Split(*services, ",") {
		quoted = append(quoted, fmt.Sprintf("%q", strings.TrimSpace(s)))
	}
	cfg := `provider "` + *runtime + `" {
  image "postgres" { ref = "sandboxer.local/postgres:17" }
  image "redis"    { ref = "sandboxer.local/redis:7" }
}
project "bench" {
  services = [` + strings.Join(quoted, ", ") + `]
}
sandbox "agent" {
  project   = project.bench
  on_demand = true
  ttl       = "1h"
}
`
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
	req := []string{"request", "sandbox.agent", "--key", "bench", "--json"}
	start := time.Now()
	_, err = sbx(req...)
	check(err)
	fmt.Printf("provisioned sandbox.agent[\"bench\"] (%s) in %s\n", *services, time.Since(start).Round(time.Millisecond))
	defer func() {
		if _, err := sbx("release", "sandbox.agent", "--key", "bench"); err != nil {
			fmt.Fprintln(os.Stderr, "release:", err)
		}
		// A release leaves what the lineage's sandboxes shared (the
		// Kubernetes runtime's Service and NetworkPolicy) to the reaper.
		if _, err := sbx("reap"); err != nil {
			fmt.Fprintln(os.Stderr, "reap:", err)
		}
	}()

	// CLI: one whole process per call.
	cli := make([]time.Duration, 0, *n)
	for range *n {
		t := time.Now()
		out, err := sbx(req...)
		check(err)
		cli = append(cli, time.Since(t))
		mustReuse(out)
	}
	report("CLI request (cache hit, probe included)", cli)

	// API: serve, one keep-alive client.
	addrFile := filepath.Join(dir, "addr.txt")
	srv := exec.Command(abs, "--chdir", dir, "serve", "--listen", "127.0.0.1:0", "--addr-file", addrFile, "--reap-interval", "0")
	srv.Env = append(os.Environ(), "SANDBOXER_API_TOKEN="+token)
	check(srv.Start())
	defer func() {
		_ = srv.Process.Signal(syscall.SIGTERM)
		_ = srv.Wait()
	}()
	addr := waitAddr(addrFile)
	client := &http.Client{Timeout: time.Minute}
	body := []byte(`{"address":"sandbox.agent","key":"bench"}`)
	call := func() []byte {
		r, err := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://"+addr+"/v1/request", bytes.NewReader(body))
		check(err)
		r.Header.Set("Authorization", "Bearer "+token)
		resp, err := client.Do(r)
		check(err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		check(err)
		if resp.StatusCode != http.StatusOK {
			check(fmt.Errorf("API answered %s: %s", resp.Status, b))
		}
		return b
	}
	for range 5 { // warm the connection and the server's engine client
		call()
	}
	api := make([]time.Duration, 0, *n)
	for range *n {
		t := time.Now()
		b := call()
		api = append(api, time.Since(t))
		mustReuse(b)
	}
	report("API POST /v1/request (cache hit, probe included)", api)
}

func mustReuse(out []byte) {
	var r struct {
		Reused bool `json:"reused"`
	}
	check(json.Unmarshal(out, &r))
	if !r.Reused {
		check(fmt.Errorf("a measured call was not a cache hit"))
	}
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
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	pct := func(p float64) time.Duration {
		i := int(p*float64(len(d))+0.5) - 1
		return d[min(max(i, 0), len(d)-1)]
	}
	fmt.Printf("%-50s n=%d  p50 %6.1f ms  p99 %6.1f ms  max %6.1f ms\n", what, len(d),
		ms(pct(0.50)), ms(pct(0.99)), ms(d[len(d)-1]))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchondemand:", err)
		os.Exit(1)
	}
}
