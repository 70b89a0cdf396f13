package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

// The floor comparison (issue 31): cold time-to-ready of a
// postgres[vector]+redis[search] sandbox started from a template data
// directory, beside
//
//   - raw: `docker run` of the same images on an empty data directory
//     (the image's initdb path) plus the same probe;
//   - floor: `docker run` of the same image on an already initialised
//     copy of the data directory, the copy included (made in the
//     container from a volume initialised once, before the entrypoint,
//     as the image's postgres user), plus the same probe;
//   - sandboxer with template = false.
//
// Sides alternate run by run so load drift on a shared machine hits all
// of them. The first sandboxer run makes the template and is reported on
// its own; the bench removes the templates of the bench image first (an
// unused template on the engine would make it a copy) and the ones it
// made last.

const floorSource = "sbx-bench-floor-src"

func floorBench(ctx context.Context, bin string, runs int) {
	pgID := strings.TrimSpace(docker("image", "inspect", "--format", "{{.Id}}", pgImage))
	removeTemplates(pgID)
	defer removeTemplates(pgID)
	prepareFloorSource(ctx)
	defer docker("volume", "rm", "-f", floorSource)

	first := sandboxerColdStartCfg(bin, -1, "volume", "")
	fmt.Printf("floor run 0 (makes the template): sandboxer apply %v\n", first.Round(time.Millisecond))
	var raw, floor, tpl, noTpl []time.Duration
	for i := range runs {
		raw = append(raw, rawColdStart(ctx, 1000+i, "volume"))
		floor = append(floor, floorColdStart(ctx, i))
		tpl = append(tpl, sandboxerColdStartCfg(bin, i, "volume", ""))
		noTpl = append(noTpl, sandboxerColdStartCfg(bin, 100+i, "volume", "  template = false\n"))
		fmt.Printf("floor run %d: docker run %v, floor %v, sandboxer (template) %v, sandboxer (template = false) %v\n", i+1,
			raw[i].Round(time.Millisecond), floor[i].Round(time.Millisecond), tpl[i].Round(time.Millisecond), noTpl[i].Round(time.Millisecond))
	}
	fmt.Printf("\ncold time-to-ready, postgres[vector]+redis[search], data on a volume, %d runs (p50 / p99):\n", runs)
	row := func(name string, ds []time.Duration) {
		fmt.Printf("  %-36s %8v / %8v\n", name, pct(ds, 50).Round(time.Millisecond), pct(ds, 99).Round(time.Millisecond))
	}
	row("docker run, empty data + probe", raw)
	row("floor: docker run, initialised copy", floor)
	row("sandboxer apply, from a template", tpl)
	row("sandboxer apply, template = false", noTpl)
	fmt.Printf("  %-36s %8v\n", "first sandboxer apply (makes it)", first.Round(time.Millisecond))
	fmt.Printf("  template vs docker run (p50)          %.2fx (target ≤ 0.35x)\n", float64(pct(tpl, 50))/float64(pct(raw, 50)))
	fmt.Printf("  template vs floor (p50)               %.2fx (target ≤ 1.3x)\n", float64(pct(tpl, 50))/float64(pct(floor, 50)))
	fmt.Printf("  template = false vs docker run (p50)  %.2fx\n\n", float64(pct(noTpl, 50))/float64(pct(raw, 50)))
}

// prepareFloorSource initialises a data directory once in a volume, by the
// image's own first start, then stops the server cleanly.
func prepareFloorSource(ctx context.Context) {
	docker("volume", "rm", "-f", floorSource)
	name := fmt.Sprintf("sbx-bench-floor-init-%d", os.Getpid())
	defer docker("rm", "-f", "-v", name)
	docker("run", "-d", "--name", name, "--label", "dev.sandboxer.bench=1", "-p", "127.0.0.1::5432",
		"-v", floorSource+":/var/lib/postgresql/data",
		"-e", "POSTGRES_PASSWORD="+benchSecret, "-e", "POSTGRES_INITDB_ARGS=--nosync", pgImage,
		"-c", "fsync=off")
	waitPG(ctx, port(name, "5432/tcp"))
	docker("stop", name)
}

// floorColdStart: docker run on a copy of the initialised directory, the
// copy made by the container before the image's entrypoint runs.
func floorColdStart(ctx context.Context, i int) time.Duration {
	pg := fmt.Sprintf("sbx-bench-floor-pg-%d-%d", os.Getpid(), i)
	rd := fmt.Sprintf("sbx-bench-floor-redis-%d-%d", os.Getpid(), i)
	defer docker("rm", "-f", "-v", pg, rd)
	start := time.Now()
	docker("run", "-d", "--name", pg, "--label", "dev.sandboxer.bench=1", "-p", "127.0.0.1::5432",
		"--user", "postgres", "-v", floorSource+":/from:ro", "--entrypoint", "sh", pgImage,
		"-c", `cp -a /from/. "$PGDATA"/ && exec docker-entrypoint.sh postgres -c fsync=off -c synchronous_commit=off -c full_page_writes=off`)
	docker("run", "-d", "--name", rd, "-p", "127.0.0.1::6379", redisImage,
		"redis-server", "--requirepass", benchSecret, "--loadmodule", searchPath)
	waitPG(ctx, port(pg, "5432/tcp"))
	rc := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + port(rd, "6379/tcp"), Password: benchSecret, MaxRetries: -1})
	defer rc.Close()
	waitFor(func() error { return rc.Ping(ctx).Err() })
	return time.Since(start)
}

func waitPG(ctx context.Context, pgPort string) {
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
}

// sandboxerColdStartCfg times a whole `sandboxer apply` of one new
// sandbox with extra lines in the provider block.
func sandboxerColdStartCfg(bin string, i int, storage, extra string) time.Duration {
	dir, err := os.MkdirTemp("", "sbx-bench-")
	check(err)
	defer os.RemoveAll(dir)
	cfg := strings.Replace(providerBlock(storage), "provider \"docker\" {\n", "provider \"docker\" {\n"+extra, 1)
	write(dir, cfg+"\nsandbox \"cold\" {\n  project = project.bench\n}\n")
	start := time.Now()
	sandboxer(dir, bin, "apply", "--auto-approve")
	d := time.Since(start)
	sandboxer(dir, bin, "destroy", "--auto-approve")
	return d
}

// removeTemplates removes the unused template volumes of image id. One in
// use (a sandbox of another run on this engine) stays: the engine refuses
// and the bench says so, since its first run then copies it.
func removeTemplates(id string) {
	out := docker("volume", "ls", "-q", "--filter", "label=dev.sandboxer.template-image="+id)
	for _, v := range strings.Fields(out) {
		if msg, err := exec.Command("docker", "volume", "rm", v).CombinedOutput(); err != nil {
			fmt.Printf("template volume %s kept: %s", v, msg)
		}
	}
}

// pct is the p-th percentile (nearest rank).
func pct(ds []time.Duration, p float64) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	k := int(math.Ceil(p/100*float64(len(s)))) - 1
	return s[max(0, min(k, len(s)-1))]
}
