// Command benchservices measures services three and four (mysql, valkey)
// on this machine's engine beside a raw `docker run` of the same image:
//
//   - cold time-to-ready: a whole `sandboxer apply` of one new sandbox
//     with the service alone, against `docker run` of the same image
//     (the same server settings; MySQL's data on the image's volume or a
//     fresh one) followed by the same probe (go-sql-driver/mysql login +
//     SELECT 1; go-redis AUTH + PING), median of N interleaved runs;
//   - the idle memory of a sandbox of each (docker stats, after a
//     settle);
//
// Warm-pool claims are measured by scripts/benchpool (-services mysql,
// -services valkey).
//
// Usage: go run ./scripts/benchservices [-runs 5] [-bin bin/sandboxer] [-services mysql,valkey]
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/redis/go-redis/v9"
)

const (
	mysqlImage  = "sandboxer.local/mysql:11.8"
	valkeyImage = "sandboxer.local/valkey:8"
	benchSecret = "bench-only-password"
)

func main() {
	runs := flag.Int("runs", 5, "cold starts to measure for each side")
	bin := flag.String("bin", "bin/sandboxer", "sandboxer binary")
	svcs := flag.String("services", "mysql,valkey", "services to measure")
	flag.Parse()
	abs, err := filepath.Abs(*bin)
	check(err)
	ctx := context.Background()
	// The driver logs every refused connection of the probe loop.
	check(mysql.SetLogger(log.New(io.Discard, "", 0)))
	load, _ := os.ReadFile("/proc/loadavg")
	fmt.Printf("load before: %s", load)
	for _, r := range raws() {
		if !slices.Contains(strings.Split(*svcs, ","), r.service) {
			continue
		}
		svc := r.service
		var raw, sbx []time.Duration
		for i := range *runs {
			raw = append(raw, rawColdStart(ctx, r, i))
			sbx = append(sbx, sandboxerColdStart(abs, svc, i))
		}
		r, s := median(raw), median(sbx)
		fmt.Printf("%s cold time-to-ready, p50 of %d: sandboxer apply %v, docker run + probe %v (%.2fx)\n",
			svc, *runs, s.Round(time.Millisecond), r.Round(time.Millisecond), float64(s)/float64(r))
		fmt.Printf("  sandboxer %v\n  docker run %v\n", rounded(sbx), rounded(raw))
		fmt.Printf("%s idle memory of a sandbox: %.1f MiB\n", svc, idleMemory(abs, svc))
	}
	load, _ = os.ReadFile("/proc/loadavg")
	fmt.Printf("load after: %s", load)
}

// raw is how a user without sandboxer starts one service's image: the
// docker run arguments (with the server settings sandboxer gives it) and
// the same probe sandboxer uses, given the published port.
type raw struct {
	service string
	port    string
	args    []string
	probe   func(ctx context.Context, port string) func() error
}

// raws are the services this command measures.
func raws() []raw {
	return []raw{
		{
			service: "mysql", port: "3306/tcp",
			args: []string{"-e", "MARIADB_ROOT_PASSWORD=" + benchSecret, "-e", "MARIADB_DATABASE=app",
				"-e", "MARIADB_USER=app", "-e", "MARIADB_PASSWORD=" + benchSecret, "-e", "MARIADB_INITDB_SKIP_TZINFO=1",
				"-v", "/var/lib/mysql", mysqlImage,
				"--local-infile=0", "--innodb-buffer-pool-size=8M", "--innodb-flush-log-at-trx-commit=0", "--innodb-doublewrite=0"},
			probe: func(ctx context.Context, port string) func() error {
				cfg := mysql.NewConfig()
				cfg.Net, cfg.Addr, cfg.User, cfg.Passwd, cfg.DBName = "tcp", "127.0.0.1:"+port, "app", benchSecret, "app"
				cfg.Timeout = 2 * time.Second
				return func() error {
					conn, err := mysql.NewConnector(cfg)
					if err != nil {
						return err
					}
					db := sql.OpenDB(conn)
					defer db.Close()
					_, err = db.ExecContext(ctx, "SELECT 1")
					return err
				}
			},
		},
		{
			service: "valkey", port: "6379/tcp",
			args: []string{valkeyImage, "valkey-server", "--requirepass", benchSecret, "--save", "", "--appendonly", "no"},
			probe: func(ctx context.Context, port string) func() error {
				return func() error {
					rc := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + port, Password: benchSecret, MaxRetries: -1})
					defer rc.Close()
					return rc.Ping(ctx).Err()
				}
			},
		},
	}
}

// rawColdStart runs r's image as a user without sandboxer would and
// waits with the same probe.
func rawColdStart(ctx context.Context, r raw, i int) time.Duration {
	name := fmt.Sprintf("sbx-bench-raw-%s-%d-%d", r.service, os.Getpid(), i)
	defer docker("rm", "-f", "-v", name)
	start := time.Now()
	docker(append([]string{"run", "-d", "--name", name, "--label", "dev.sandboxer.bench=1", "-p", "127.0.0.1::" + strings.TrimSuffix(r.port, "/tcp")}, r.args...)...)
	waitFor(r.probe(ctx, port(name, r.port)))
	return time.Since(start)
}

func config(svc string) string {
	return `provider "docker" {
  image "mysql"  { ref = "` + mysqlImage + `" }
  image "valkey" { ref = "` + valkeyImage + `" }
}

project "bench" {
  services = ["` + svc + `"]
}

sandbox "cold" {
  project = project.bench
}
`
}

// sandboxerColdStart times a whole `sandboxer apply` of one new sandbox.
func sandboxerColdStart(bin, svc string, i int) time.Duration {
	dir, err := os.MkdirTemp("", "sbx-bench-svc-")
	check(err)
	defer os.RemoveAll(dir)
	check(os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(config(svc)), 0o644))
	if i == 0 {
		// The image inspection is cached for later runs: not what is measured.
		sandboxer(dir, bin, "plan")
	}
	start := time.Now()
	sandboxer(dir, bin, "apply", "--auto-approve")
	d := time.Since(start)
	sandboxer(dir, bin, "destroy", "--auto-approve")
	return d
}

// idleMemory applies one sandbox, lets it settle, and reads docker stats
// of its container.
func idleMemory(bin, svc string) float64 {
	dir, err := os.MkdirTemp("", "sbx-bench-mem-")
	check(err)
	defer os.RemoveAll(dir)
	check(os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(config(svc)), 0o644))
	sandboxer(dir, bin, "apply", "--auto-approve")
	defer sandboxer(dir, bin, "destroy", "--auto-approve")
	time.Sleep(10 * time.Second)
	ids := strings.Fields(docker("ps", "-q", "--filter", "label=dev.sandboxer.service="+svc, "--filter", "label=dev.sandboxer.address=sandbox.cold"))
	if len(ids) == 0 {
		fail("no %s container found", svc)
	}
	out := strings.TrimSpace(docker("stats", "--no-stream", "--format", "{{.MemUsage}}", ids[0]))
	used := strings.TrimSpace(strings.Split(out, "/")[0])
	return mib(used)
}

func mib(s string) float64 {
	for unit, f := range map[string]float64{"GiB": 1024, "MiB": 1, "KiB": 1.0 / 1024} {
		if v, ok := strings.CutSuffix(s, unit); ok {
			n, err := strconv.ParseFloat(v, 64)
			check(err)
			return n * f
		}
	}
	fail("memory %q", s)
	return 0
}

func waitFor(probe func() error) {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		err := probe()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			fail("not ready after 3m: %v", err)
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
	out, err := exec.Command(bin, append([]string{"--chdir", dir}, args...)...).CombinedOutput()
	if err != nil {
		fail("sandboxer %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func median(ds []time.Duration) time.Duration {
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[len(s)/2]
}

func rounded(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(10 * time.Millisecond)
	}
	return out
}

func check(err error) {
	if err != nil {
		fail("%v", err)
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "benchservices: "+format+"\n", args...)
	os.Exit(1)
}
