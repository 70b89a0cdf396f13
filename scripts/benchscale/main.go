// Command benchscale provisions N sandboxes in one `sandboxer apply`, waits
// for them to go idle, reads every container's memory through the Docker
// stats API (the figure `docker stats` shows: usage minus inactive file
// cache; tmpfs pages, PostgreSQL's data directory, count), counts the
// networks the lineage holds, then destroys everything and checks that
// nothing labelled with the lineage is left.
//
// Usage: go run ./scripts/benchscale [-bin bin/sandboxer] [-n 200]
// [-services postgres,redis] [-parallelism 16] [-idle 20s]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
	"golang.org/x/sync/errgroup"

	"github.com/sandboxer/sandboxer/providers/docker"
	"github.com/sandboxer/sandboxer/state"
)

func main() {
	bin := flag.String("bin", "bin/sandboxer", "sandboxer binary")
	n := flag.Int("n", 200, "sandboxes in the one apply")
	services := flag.String("services", "postgres,redis", "services of each sandbox")
	parallelism := flag.Int("parallelism", 16, "apply --parallelism")
	idle := flag.Duration("idle", 20*time.Second, "wait after apply before reading memory, so start-up allocations settle")
	keep := flag.Bool("keep", false, "leave the sandboxes running (no destroy)")
	flag.Parse()
	if err := run(*bin, *n, *services, *parallelism, *idle, *keep); err != nil {
		fmt.Fprintln(os.Stderr, "benchscale:", err)
		os.Exit(1)
	}
}

func run(bin string, n int, services string, parallelism int, idle time.Duration, keep bool) error {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "sbx-bench-scale-")
	if err != nil {
		return err
	}
	// A kept run keeps its directory too: its state is what destroys it.
	defer func() {
		if !keep {
			os.RemoveAll(dir)
		}
	}()
	if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(configFor(n, services)), 0o600); err != nil {
		return err
	}
	sbx := func(args ...string) (string, error) {
		cmd := exec.Command(abs, append([]string{"--chdir", dir}, args...)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			return stdout.String(), fmt.Errorf("sandboxer %s: %v\n%s%s", strings.Join(args, " "), err, tail(stdout.String()), tail(stderr.String()))
		}
		return stdout.String(), nil
	}
	ctx := context.Background()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return err
	}
	defer cli.Close()

	fmt.Printf("apply of %d sandboxes (%s), --parallelism %d\n", n, services, parallelism)
	start := time.Now()
	out, applyErr := sbx("apply", "--auto-approve", "--parallelism", fmt.Sprint(parallelism))
	applyTook := time.Since(start)
	snap, err := state.Open(filepath.Join(dir, ".sandboxer", "state.db")).Snapshot(ctx)
	if err != nil {
		return err
	}
	lineage := snap.Lineage
	// Whatever happened, leave nothing behind.
	defer func() {
		if keep && applyErr == nil {
			fmt.Printf("kept: sandboxer --chdir %s destroy --auto-approve removes them\n", dir)
			return
		}
		if err := sweep(ctx, cli, lineage); err != nil {
			fmt.Fprintln(os.Stderr, "final sweep:", err)
		}
	}()
	if applyErr != nil {
		return applyErr
	}
	if want := fmt.Sprintf("Sandboxes: %d created", n); !strings.Contains(out, want) {
		return fmt.Errorf("apply output lacks %q:\n%s", want, tail(out))
	}
	fmt.Printf("apply: %s wall (%s per sandbox)\n", applyTook.Round(10*time.Millisecond), (applyTook / time.Duration(n)).Round(time.Millisecond))

	nets, err := cli.NetworkList(ctx, network.ListOptions{Filters: byLineage(lineage)})
	if err != nil {
		return err
	}
	fmt.Printf("networks (address pools) the lineage holds: %d\n", len(nets))

	fmt.Printf("idle for %s, then reading docker stats\n", idle)
	time.Sleep(idle)
	perSandbox, perService, err := memory(ctx, cli, lineage)
	if err != nil {
		return err
	}
	if len(perSandbox) != n {
		return fmt.Errorf("memory read for %d sandboxes, want %d", len(perSandbox), n)
	}
	sums := make([]float64, 0, n)
	total := 0.0
	for _, v := range perSandbox {
		sums = append(sums, v)
		total += v
	}
	slices.Sort(sums)
	fmt.Printf("memory per idle sandbox (docker stats): mean %.1f MiB, median %.1f MiB, max %.1f MiB; all %d: %.0f MiB\n",
		total/float64(n), sums[n/2], sums[n-1], n, total)
	for _, svc := range sortedKeys(perService) {
		v := perService[svc]
		fmt.Printf("  %s: mean %.1f MiB\n", svc, mean(v))
	}
	if keep {
		return nil
	}

	start = time.Now()
	if _, err := sbx("destroy", "--auto-approve"); err != nil {
		return err
	}
	fmt.Printf("destroy: %s wall\n", time.Since(start).Round(10*time.Millisecond))
	left, err := labelled(ctx, cli, lineage)
	if err != nil {
		return err
	}
	if len(left) > 0 {
		return fmt.Errorf("left after destroy: %s", strings.Join(left, ", "))
	}
	fmt.Println("left after destroy (containers, networks, volumes labelled with the lineage): none")
	return nil
}

func configFor(n int, services string) string {
	var quoted []string
	for _, s := range strings.Split(services, ",") {
		quoted = append(quoted, fmt.Sprintf("%q", strings.TrimSpace(s)))
	}
	var b strings.Builder
	b.WriteString(`provider "docker" {
  image "postgres" { ref = "sandboxer.local/postgres:17" }
  image "redis"    { ref = "sandboxer.local/redis:7" }
}
project "scale" {
  services = [` + strings.Join(quoted, ", ") + `]
}
`)
	for i := range n {
		fmt.Fprintf(&b, "sandbox \"s%03d\" {\n  project = project.scale\n}\n", i)
	}
	return b.String()
}

func byLineage(lineage string) filters.Args {
	return filters.NewArgs(
		filters.Arg("label", docker.LabelManaged+"=true"),
		filters.Arg("label", docker.LabelLineage+"="+lineage),
	)
}

// memory reads each container's memory as `docker stats` computes it
// (github.com/docker/cli, calculateMemUsageUnixNoCache): usage minus
// inactive file pages. Returned in MiB per sandbox address and per service.
func memory(ctx context.Context, cli *client.Client, lineage string) (map[string]float64, map[string][]float64, error) {
	cs, err := cli.ContainerList(ctx, container.ListOptions{Filters: byLineage(lineage)})
	if err != nil {
		return nil, nil, err
	}
	var mu sync.Mutex
	perSandbox := map[string]float64{}
	perService := map[string][]float64{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for _, c := range cs {
		g.Go(func() error {
			resp, err := cli.ContainerStatsOneShot(gctx, c.ID)
			if err != nil {
				return err
			}
			defer resp.Body.Close()
			var st container.StatsResponse
			if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
				return fmt.Errorf("stats of %s: %w", c.ID[:12], err)
			}
			mib := float64(usageNoCache(st.MemoryStats)) / (1 << 20)
			mu.Lock()
			defer mu.Unlock()
			perSandbox[c.Labels[docker.LabelAddress]] += mib
			svc := c.Labels[docker.LabelService]
			perService[svc] = append(perService[svc], mib)
			return nil
		})
	}
	return perSandbox, perService, g.Wait()
}

func usageNoCache(m container.MemoryStats) uint64 {
	if v, ok := m.Stats["total_inactive_file"]; ok && v < m.Usage { // cgroup v1
		return m.Usage - v
	}
	if v := m.Stats["inactive_file"]; v < m.Usage { // cgroup v2
		return m.Usage - v
	}
	return m.Usage
}

// labelled lists what still carries the lineage.
func labelled(ctx context.Context, cli *client.Client, lineage string) ([]string, error) {
	f := byLineage(lineage)
	var out []string
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, err
	}
	for _, c := range cs {
		out = append(out, "container "+strings.Join(c.Names, ","))
	}
	ns, err := cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		return nil, err
	}
	for _, n := range ns {
		out = append(out, "network "+n.Name)
	}
	vs, err := cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return nil, err
	}
	for _, v := range vs.Volumes {
		out = append(out, "volume "+v.Name)
	}
	return out, nil
}

// sweep removes whatever the lineage left (after a failed run).
func sweep(ctx context.Context, cli *client.Client, lineage string) error {
	if lineage == "" {
		return nil
	}
	f := byLineage(lineage)
	cs, err := cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return err
	}
	for _, c := range cs {
		_ = cli.ContainerRemove(ctx, c.ID, container.RemoveOptions{Force: true, RemoveVolumes: true})
	}
	ns, err := cli.NetworkList(ctx, network.ListOptions{Filters: f})
	if err != nil {
		return err
	}
	for _, n := range ns {
		_ = cli.NetworkRemove(ctx, n.ID)
	}
	return nil
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(max(len(v), 1))
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func tail(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	return strings.Join(lines, "\n") + "\n"
}
