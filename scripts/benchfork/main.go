// Command benchfork measures `sandboxer fork` beside the two ways to get
// the same copies without it, on the same source, in one run (issue 32):
//
//   - fork: `sandboxer fork --count N` (one capture, N copies at once);
//   - (a) today's way: `sandboxer snapshot`, then per copy a `request`
//     and a `restore`, in series;
//   - (b) the floor: a `cp -a` of the source's data directory N times
//     (at once, inside its container) plus N PostgreSQL server starts on
//     the copies (at once, inside the same container), until each
//     answers pg_isready.
//
// The source is a postgres+redis on-demand sandbox holding -mib MiB
// (nine tenths a PostgreSQL table, vacuumed once loaded unless
// -settle=false, a tenth Redis keys). For each size and count it prints
// the seconds of each side, the ratios fork/(a) and fork/(b), the time
// per GiB, how long the source's writers were held (the fork's held_ms;
// a writer committing an insert every -write-every on the source
// measures its own longest wait too) and the host's CPU seconds during
// the fork (-cpu: by command too).
//
// Usage: go run ./scripts/benchfork [-bin bin/sandboxer] [-mib 100,1024] [-count 1,10] [-skip-a] [-a-max 2] [-settle=false] [-write-every 2ms] [-cpu]
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
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

func main() {
	bin := flag.String("bin", "bin/sandboxer", "sandboxer binary")
	sizes := flag.String("mib", "100,1024", "source sizes in MiB, comma-separated")
	counts := flag.String("count", "1,10", "copies per fork, comma-separated")
	skipA := flag.Bool("skip-a", false, "do not measure (a), snapshot + request + restore per copy (slow at 1 GiB)")
	aMax := flag.Int("a-max", 0, "measure (a) only up to this many copies (0: all); above it, (a) is extrapolated from the rows measured at this size, (a)(1) + (N-1)·((a)(2)-(a)(1)), and marked ~")
	storage := flag.String("storage", "volume", "PostgreSQL's storage: volume or tmpfs")
	writeEvery := flag.Duration("write-every", 2*time.Millisecond, "the writer on the source commits an insert this often (as fast as it can with 0: it then takes a core from the fork, which (a) does not pay)")
	settle := flag.Bool("settle", true, "vacuum the source's table once it is filled (without: the autovacuum rewrites the fresh table while the forks run)")
	cpuBy := flag.Bool("cpu", false, "print where each fork's CPU time went, by command (host processes sampled every 100 ms)")
	flag.Parse()
	abs, err := filepath.Abs(*bin)
	check(err)
	dir, err := os.MkdirTemp("", "sbx-bench-fork-")
	check(err)
	defer os.RemoveAll(dir)
	cfg := `provider "docker" {
  image "postgres" { ref = "sandboxer.local/postgres:17" }
  image "redis"    { ref = "sandboxer.local/redis:7" }
  memory_mb = 2048
  storage   = "` + *storage + `"
}
project "bench" {
  services = ["postgres", "redis"]
}
sandbox "agent" {
  project   = project.bench
  on_demand = true
  ttl       = "2h"
}
`
	check(os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(cfg), 0o600))
	// holds collects the fork's own account of its hold (the Docker
	// runtime's SANDBOXER_DEBUG_FORK lines), printed under the table.
	var holds []string
	sbx := func(args ...string) ([]byte, error) {
		cmd := exec.Command(abs, append([]string{"--chdir", dir}, args...)...)
		cmd.Env = append(os.Environ(), "SANDBOXER_DEBUG_FORK=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("%v: %v: %s", args, err, stderr.String())
		}
		for _, l := range strings.Split(stderr.String(), "\n") {
			if strings.Contains(l, " captured by ") || strings.HasPrefix(l, "sandboxer: fork: ") {
				holds = append(holds, l)
			}
		}
		return out, nil
	}

	release := func(key string) {
		if _, err := sbx("release", "sandbox.agent", "--key", key); err != nil {
			fmt.Fprintln(os.Stderr, "release:", err)
		}
	}
	fmt.Printf("%-6s %-3s %9s %10s %9s %8s %8s %9s %8s %9s %9s %6s\n", "MiB", "N", "fork s", "(a) s", "(b) s", "fork/a", "fork/b", "s/GiB", "held ms", "wait ms", "fork cpu", "load")
	for _, ms := range strings.Split(*sizes, ",") {
		mibs, err := strconv.Atoi(strings.TrimSpace(ms))
		check(err)
		key := fmt.Sprintf("src-%d", mibs)
		onExit = func() {
			release(key)
			os.RemoveAll(dir)
		}
		out, err := sbx("request", "sandbox.agent", "--key", key, "--json")
		check(err)
		env := envOf(out)
		fill(env, mibs, *settle)
		// The forks first, then the floors, then (a): (a)'s snapshot
		// leaves a template database in the source (a copy of its data,
		// for a later restore), which a fork or a floor after it would
		// copy too.
		type row struct {
			n                   int
			forkS, aS, bS       float64
			aMark               string
			held, wait          int64
			cpu                 float64
			load, methods       string
			bytes               int64
			cpuLines, holdLines []string
		}
		var rows []*row
		for _, cs := range strings.Split(*counts, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(cs))
			check(err)
			r := &row{n: n}
			rows = append(rows, r)
			load0 := loadavg()
			// The writer: a committed insert into a table of its own every
			// -write-every, its longest wait noted.
			stop, _ := writer(env, *writeEvery)
			cpu0 := hostCPU()
			var cpuStop func() []string
			if *cpuBy {
				cpuStop = byCommand()
			}
			start := time.Now()
			out, err := sbx("fork", "sandbox.agent", "--key", key, "--count", strconv.Itoa(n), "--to-key", fmt.Sprintf("f%d-%d", mibs, n), "--json")
			r.forkS = time.Since(start).Seconds()
			r.wait = stop().Milliseconds()
			r.cpu = hostCPU() - cpu0
			if cpuStop != nil {
				r.cpuLines = cpuStop()
			}
			r.load = load0 + "-" + loadavg()
			check(err)
			var res struct {
				Sandboxes []struct{ Address string } `json:"sandboxes"`
				HeldMS    int64                      `json:"held_ms"`
				Bytes     int64                      `json:"bytes"`
				Methods   map[string]string          `json:"methods"`
			}
			check(json.Unmarshal(out, &res))
			r.held, r.bytes, r.methods = res.HeldMS, res.Bytes, fmt.Sprint(res.Methods)
			r.holdLines, holds = holds, nil
			for i := range res.Sandboxes {
				release(fmt.Sprintf("f%d-%d-%d", mibs, n, i+1))
			}
		}
		for _, r := range rows {
			r.bS = floor(key, r.n)
		}
		measuredA := map[int]float64{}
		for _, r := range rows {
			n := r.n
			if !*skipA && *aMax > 0 && n > *aMax {
				a1, ok1 := measuredA[1]
				a2, ok2 := measuredA[2]
				if ok1 && ok2 {
					r.aS, r.aMark = a1+float64(n-1)*(a2-a1), "~"
				}
			} else if !*skipA {
				snap := fmt.Sprintf("b%d-%d-%d", mibs, n, time.Now().Unix())
				start := time.Now()
				// (a) failing (a restore timing out on a loaded host) is
				// reported, not fatal: the row shows no (a).
				aErr := func() error {
					if _, err := sbx("snapshot", fmt.Sprintf("sandbox.agent[%q]", key), "--name", snap); err != nil {
						return err
					}
					for i := 1; i <= n; i++ {
						k := fmt.Sprintf("a%d-%d-%d", mibs, n, i)
						if _, err := sbx("request", "sandbox.agent", "--key", k); err != nil {
							return err
						}
						if _, err := sbx("restore", fmt.Sprintf("sandbox.agent[%q]", k), "--snapshot", snap); err != nil {
							return err
						}
					}
					return nil
				}()
				r.aS = time.Since(start).Seconds()
				measuredA[n] = r.aS
				if aErr != nil {
					// What it took until it failed: a lower bound.
					fmt.Fprintln(os.Stderr, "benchfork: (a):", aErr)
					r.aMark = "failed>"
					delete(measuredA, n)
				}
				for i := 1; i <= n; i++ {
					release(fmt.Sprintf("a%d-%d-%d", mibs, n, i))
				}
				_, _ = sbx("snapshot", "rm", snap)
				holds = nil
			}
		}
		ratio := func(a, b float64) string {
			if b == 0 {
				return "-"
			}
			return fmt.Sprintf("%.2f", a/b)
		}
		for _, r := range rows {
			fmt.Printf("%-6d %-3d %9.1f %10s %9.1f %8s %8s %9.1f %8d %9d %9.1f %6s   %v %d bytes\n", mibs, r.n, r.forkS, r.aMark+strconv.FormatFloat(r.aS, 'f', 1, 64), r.bS, ratio(r.forkS, r.aS), ratio(r.forkS, r.bS),
				r.forkS/(float64(r.bytes)/(1<<30)), r.held, r.wait, r.cpu, r.load, r.methods, r.bytes)
			if len(r.cpuLines) > 0 {
				fmt.Println("    fork CPU s by command:", strings.Join(r.cpuLines, ", "))
			}
			for _, l := range r.holdLines {
				fmt.Println("   ", l)
			}
		}
		release(key)
	}
}

// loadavg is the host's one-minute load average.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
}

// envOf is the env object of a request's JSON.
func envOf(out []byte) map[string]string {
	var r struct{ Env map[string]string }
	check(json.Unmarshal(out, &r))
	return r.Env
}

// fill puts mib MiB into the source: nine tenths a table, a tenth keys;
// with settle, the table is vacuumed.
func fill(env map[string]string, mib int, settle bool) {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, env["SANDBOXER_POSTGRES_URL"])
	check(err)
	defer conn.Close(ctx)
	rows := mib * 9 / 10 * (1 << 20) / 300 // ~300 bytes a row on disk
	_, err = conn.Exec(ctx, `CREATE TABLE big AS SELECT i AS id, repeat(md5(i::text), 7) AS v FROM generate_series(1, $1) i`, rows)
	check(err)
	_, err = conn.Exec(ctx, `CREATE TABLE w (id bigserial PRIMARY KEY, at timestamptz DEFAULT now())`)
	check(err)
	if settle {
		// What a loading script ends with: the vacuum that would otherwise
		// rewrite the fresh table in the background (every page's hint
		// bits, a WAL record each) during the forks.
		_, err = conn.Exec(ctx, `VACUUM (ANALYZE) big`)
		check(err)
	}
	opt, err := redis.ParseURL(env["SANDBOXER_REDIS_URL"])
	check(err)
	rdb := redis.NewClient(opt)
	defer rdb.Close()
	val := strings.Repeat("x", 1024)
	keys := mib * (1 << 20) / 10 / 1024
	for i := 0; i < keys; i += 1000 {
		p := rdb.Pipeline()
		for j := i; j < min(i+1000, keys); j++ {
			p.Set(ctx, "k"+strconv.Itoa(j), val, 0)
		}
		_, err := p.Exec(ctx)
		check(err)
	}
}

// writer inserts into w every every (at most) until stopped; stop
// returns its longest wait.
func writer(env map[string]string, every time.Duration) (stop func() time.Duration, waited *time.Duration) {
	ctx, cancel := context.WithCancel(context.Background())
	conn, err := pgx.Connect(ctx, env["SANDBOXER_POSTGRES_URL"])
	check(err)
	var mu sync.Mutex
	var longest time.Duration
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			t := time.Now()
			if _, err := conn.Exec(ctx, `INSERT INTO w DEFAULT VALUES`); err != nil {
				return
			}
			mu.Lock()
			longest = max(longest, time.Since(t))
			mu.Unlock()
			if d := every - time.Since(t); d > 0 {
				time.Sleep(d)
			}
		}
	}()
	return func() time.Duration {
		cancel()
		<-done
		conn.Close(context.Background())
		mu.Lock()
		defer mu.Unlock()
		return longest
	}, &longest
}

// floor is (b): n copies of the source's data directory with cp, at
// once, then n servers started on them, at once, until each answers
// pg_isready; all inside the source's PostgreSQL container, then removed.
func floor(key string, n int) float64 {
	out, err := exec.Command("docker", "ps", "-q", "--filter", "label=dev.sandboxer.service=postgres",
		"--filter", fmt.Sprintf("label=dev.sandboxer.address=sandbox.agent[%q]", key)).Output()
	check(err)
	id := strings.TrimSpace(string(out))
	if id == "" || strings.Contains(id, "\n") {
		fmt.Fprintf(os.Stderr, "floor: want one postgres container of %s, found %q\n", key, id)
		return 0
	}
	script := fmt.Sprintf(`set -e
n=%d
i=1; while [ $i -le $n ]; do cp -a "$PGDATA" /tmp/floor-$i & i=$((i+1)); done; wait
i=1; while [ $i -le $n ]; do rm -f /tmp/floor-$i/postmaster.pid; i=$((i+1)); done
i=1; while [ $i -le $n ]; do pg_ctl -D /tmp/floor-$i -o "-p $((6000+i)) -k /tmp -c shared_buffers=16MB -c listen_addresses=''" -l /tmp/floor-$i.log start >/dev/null & i=$((i+1)); done; wait
i=1; while [ $i -le $n ]; do until pg_isready -q -h /tmp -p $((6000+i)); do sleep 0.01; done; i=$((i+1)); done
`, n)
	cleanup := fmt.Sprintf(`n=%d; i=1; while [ $i -le $n ]; do pg_ctl -D /tmp/floor-$i -m immediate stop >/dev/null 2>&1; rm -rf /tmp/floor-$i /tmp/floor-$i.log; i=$((i+1)); done`, n)
	start := time.Now()
	cmd := exec.Command("docker", "exec", "-u", "postgres", id, "sh", "-c", script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err = cmd.Run()
	took := time.Since(start).Seconds()
	_ = exec.Command("docker", "exec", "-u", "postgres", id, "sh", "-c", cleanup).Run()
	if err != nil {
		fmt.Fprintf(os.Stderr, "floor: %v: %s\n", err, stderr.String())
		return 0
	}
	return took
}

// onExit is run before a failure exits: it releases what the run holds.
var onExit func()

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchfork:", err)
		if onExit != nil {
			onExit()
		}
		os.Exit(1)
	}
}

// hostCPU is the host's busy time so far, in seconds (/proc/stat: every
// state but idle and iowait), to report a fork's CPU time.
func hostCPU() float64 {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var busy float64
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		n, _ := strconv.ParseFloat(v, 64)
		busy += n
	}
	return busy / 100 // USER_HZ
}

// byCommand samples every process's CPU time until stop is called and
// returns where the time went, by command name, biggest first: what a
// process used before the first sample is not counted, and what one used
// after the last sample before it ended is lost (a sample every 100 ms).
func byCommand() (stop func() []string) {
	type key struct{ pid, start string }
	first, last, comm := map[key]float64{}, map[key]float64{}, map[key]string{}
	sample := func(initial bool) {
		ds, _ := os.ReadDir("/proc")
		for _, d := range ds {
			if d.Name()[0] < '0' || d.Name()[0] > '9' {
				continue
			}
			b, err := os.ReadFile("/proc/" + d.Name() + "/stat")
			if err != nil {
				continue
			}
			s := string(b)
			open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
			if open < 0 || close < open {
				continue
			}
			f := strings.Fields(s[close+1:])
			if len(f) < 20 {
				continue
			}
			u, _ := strconv.ParseFloat(f[11], 64)
			st, _ := strconv.ParseFloat(f[12], 64)
			k := key{d.Name(), f[19]}
			if initial {
				first[k] = u + st
			}
			last[k], comm[k] = u+st, s[open+1:close]
		}
	}
	sample(true)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-done:
				sample(false)
				return
			case <-time.After(100 * time.Millisecond):
				sample(false)
			}
		}
	}()
	return func() []string {
		close(done)
		<-stopped
		sum := map[string]float64{}
		for k, v := range last {
			sum[comm[k]] += (v - first[k]) / 100
		}
		names := make([]string, 0, len(sum))
		for n := range sum {
			if sum[n] >= 0.05 {
				names = append(names, n)
			}
		}
		sort.Slice(names, func(i, j int) bool { return sum[names[i]] > sum[names[j]] })
		out := make([]string, 0, len(names))
		for _, n := range names {
			out = append(out, fmt.Sprintf("%s %.1f", n, sum[n]))
		}
		return out
	}
}
