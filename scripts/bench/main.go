// Command bench measures sandboxer against a raw `docker run` of the same
// images, on this machine's engine, and prints the figures README quotes:
//
//   - cold time-to-ready of a postgres[vector]+redis[search] sandbox
//     (`sandboxer apply`, whole CLI run) against `docker run` of the same
//     two images followed by the same readiness probe (pgx SELECT 1, redis
//     AUTH+PING), median of N runs, and their ratio;
//   - a no-op `sandboxer apply` over 10 live sandboxes (refresh probes all);
//   - the floor comparison of issue 31 (floor.go): from a template, beside
//     docker run on an empty and on an initialised data directory, p50/p99;
//   - one apply of 30 sandboxes, templates on beside template = false
//     (applyn.go).
//
// Both cold starts are measured twice: PostgreSQL's data on a volume (the
// image's own VOLUME for docker run; sandboxer's default storage) and on a
// tmpfs (docker run --tmpfs; storage = "tmpfs").
//
// Usage: go run ./scripts/bench [-runs 5] [-floor-runs 20] [-apply-n 30] [-only floor|apply] [-bin bin/sandboxer]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

const (
	pgImage     = "sandboxer.local/postgres:17"
	redisImage  = "sandboxer.local/redis:7"
	searchPath  = "/usr/lib/redis/modules/redisearch.so"
	benchSecret = "bench-only-password"
)

// providerBlock is the configuration of every bench sandbox, with
// PostgreSQL's data where storage says.
func providerBlock(storage string) string {
	return `provider "docker" {
  storage = "` + storage + `"
  image "postgres" { ref = "` + pgImage + `" }
  image "redis" {
    ref     = "` + redisImage + `"
    modules = { search = "` + searchPath + `" }
  }
}

project "bench" {
  services   = ["postgres", "redis"]
  extensions = { postgres = ["vector"], redis = ["search"] }
}
`
}

func main() {
	runs := flag.Int("runs", 5, "cold starts to measure for each side")
	bin := flag.String("bin", "bin/sandboxer", "sandboxer binary")
	floorRuns := flag.Int("floor-runs", 20, "runs of the floor comparison (issue 31)")
	only := flag.String("only", "", `"floor": the floor comparison alone; "apply": the apply of -apply-n alone`)
	applyN := flag.Int("apply-n", 30, "sandboxes in one apply, templates on and off (issue 31)")
	applyRuns := flag.Int("apply-runs", 2, "runs of the apply of -apply-n, each side")
	flag.Parse()
	abs, err := filepath.Abs(*bin)
	check(err)
	ctx := context.Background()
	if *only == "apply" {
		applyManyBench(abs, *applyN, *applyRuns)
		return
	}
	floorBench(ctx, abs, *floorRuns)
	if *only == "floor" {
		return
	}
	applyManyBench(abs, *applyN, *applyRuns)

	// Each side with PostgreSQL's data in the same place: a volume (what
	// a plain docker run of the image gets, and sandboxer's default) and
	// a tmpfs (docker run --tmpfs, storage = "tmpfs").
	for _, storage := range []string{"volume", "tmpfs"} {
		var raw, sbx []time.Duration
		for i := range *runs {
			// Alternate so load drift on a shared machine hits both sides.
			raw = append(raw, rawColdStart(ctx, i, storage))
			sbx = append(sbx, sandboxerColdStart(abs, i, storage))
			fmt.Printf("%s run %d: docker run %v, sandboxer apply %v\n", storage, i+1, raw[i].Round(time.Millisecond), sbx[i].Round(time.Millisecond))
		}
		r, s := median(raw), median(sbx)
		fmt.Printf("\ncold time-to-ready, postgres[vector]+redis[search], data on a %s, median of %d:\n", storage, *runs)
		fmt.Printf("  docker run + probe : %v\n", r.Round(time.Millisecond))
		fmt.Printf("  sandboxer apply    : %v\n", s.Round(time.Millisecond))
		fmt.Printf("  ratio              : %.2fx\n\n", float64(s)/float64(r))
	}

	noop := noopApply(abs, 10, *runs)
	fmt.Printf("\nno-op apply over 10 live sandboxes, median of %d: %v\n", *runs, noop.Round(time.Millisecond))
}

// rawColdStart starts both containers with docker run, as a user without
// sandboxer would, then waits with the same probe sandboxer uses. With
// storage "tmpfs" PostgreSQL's data is on a tmpfs, else on the anonymous
// volume the image declares.
func rawColdStart(ctx context.Context, i int, storage string) time.Duration {
	pg := fmt.Sprintf("sbx-bench-raw-pg-%d-%d", os.Getpid(), i)
	rd := fmt.Sprintf("sbx-bench-raw-redis-%d-%d", os.Getpid(), i)
	defer docker("rm", "-f", "-v", pg, rd)
	args := []string{"run", "-d", "--name", pg, "--label", "dev.sandboxer.bench=1", "-p", "127.0.0.1::5432",
		"-e", "POSTGRES_PASSWORD=" + benchSecret, "-e", "POSTGRES_INITDB_ARGS=--nosync"}
	if storage == "tmpfs" {
		args = append(args, "--tmpfs", "/var/lib/postgresql/data")
	}
	args = append(args, pgImage, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	start := time.Now()
	docker(args...)
	docker("run", "-d", "--name", rd, "-p", "127.0.0.1::6379", redisImage,
		"redis-server", "--requirepass", benchSecret, "--loadmodule", searchPath)
	pgPort := port(pg, "5432/tcp")
	redisPort := port(rd, "6379/tcp")
	url := fmt.Sprintf("postgres://postgres:%s@127.0.0.1:%s/postgres?sslmode=disable", benchSecret, pgPort)
	waitFor(func() error {
		c, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer c.Close(ctx)
		_, err = c.Exec(ctx, "SELECT 1")
		return err
	})
	rc := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + redisPort, Password: benchSecret, MaxRetries: -1})
	defer rc.Close()
	waitFor(func() error { return rc.Ping(ctx).Err() })
	return time.Since(start)
}

// sandboxerColdStart times a whole `sandboxer apply` of one new sandbox.
func sandboxerColdStart(bin string, i int, storage string) time.Duration {
	dir, err := os.MkdirTemp("", "sbx-bench-")
	check(err)
	defer os.RemoveAll(dir)
	write(dir, providerBlock(storage)+"\nsandbox \"cold\" {\n  project = project.bench\n}\n")
	start := time.Now()
	sandboxer(dir, bin, "apply", "--auto-approve")
	d := time.Since(start)
	sandboxer(dir, bin, "destroy", "--auto-approve")
	return d
}

// noopApply provisions n sandboxes, then times apply runs that find
// nothing to do (each one still refreshes all n).
func noopApply(bin string, n, runs int) time.Duration {
	dir, err := os.MkdirTemp("", "sbx-bench-noop-")
	check(err)
	defer os.RemoveAll(dir)
	var b strings.Builder
	b.WriteString(providerBlock("volume"))
	for i := range n {
		fmt.Fprintf(&b, "\nsandbox \"s%02d\" {\n  project = project.bench\n}\n", i)
	}
	write(dir, b.String())
	sandboxer(dir, bin, "apply", "--auto-approve", "--parallelism", "4")
	defer sandboxer(dir, bin, "destroy", "--auto-approve", "--parallelism", "8")
	var times []time.Duration
	for range runs {
		start := time.Now()
		out := sandboxer(dir, bin, "apply", "--auto-approve")
		times = append(times, time.Since(start))
		if !strings.Contains(out, fmt.Sprintf("0 to create, 0 to replace, 0 to destroy, %d reused", n)) {
			fail("no-op apply was not a no-op:\n%s", out)
		}
	}
	return median(times)
}

func waitFor(probe func() error) {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		err := probe()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			fail("not ready after 2m: %v", err)
		}
		time.Sleep(25 * time.Millisecond)
	}
}

func port(container, p string) string {
	out := docker("port", container, p)
	line := strings.TrimSpace(strings.Split(out, "\n")[0])
	return line[strings.LastIndex(line, ":")+1:]
}

func docker(args ...string) string {
	out, err := exec.Command("docker", args...).CombinedOutput()
	if err != nil && args[0] != "rm" {
		fail("docker %s: %v\n%s", args[0], err, out)
	}
	return string(out)
}

func sandboxer(dir, bin string, args ...string) string {
	cmd := exec.Command(bin, append([]string{"--chdir", dir}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		fail("sandboxer %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func write(dir, body string) {
	check(os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(body), 0o644))
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func check(err error) {
	if err != nil {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(1)
}
