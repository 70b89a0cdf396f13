// Command benchplan times a whole-process `sandboxer plan --refresh=false
// --json` of N sandboxes in 20 projects with an empty state, side by side
// with `terraform plan -refresh=false` of the equivalent N `terraform_data`
// resources, and prints the figures README quotes: the median wall time
// and peak RSS of each side per size, their ratios, and how sandboxer's
// time grows with N.
//
// Both workloads are generated into a temporary folder. The runs of the
// two tools are interleaved (sandboxer, terraform, sandboxer, …) after one
// warm-up run each, so load drift on a shared machine hits both sides.
// Peak RSS is the child's ru_maxrss from wait4. terraform_data is built
// into Terraform (terraform.io/builtin/terraform), so `terraform init`
// downloads nothing; the run is skipped with a message when terraform is
// not installed.
//
// Terraform takes about a minute a run at 10,000 resources here, so by
// default it runs up to 5,000 (the sizes the goals name) and sandboxer
// alone at 10,000, for the growth; -terraform-max 10000 adds it there.
//
// With -profile K it then profiles K plans of each size
// (SANDBOXER_CPUPROFILE) and prints where their CPU goes: start-up, parse,
// evaluation, state read, plan, JSON rendering, garbage collection.
//
// -distinct gives every sandbox a database of its own, so that no two
// blocks are alike (the default workload has 40 distinct bodies, which
// sandboxer decodes once each).
//
// Usage: go run ./scripts/benchplan [-bin bin/sandboxer] [-sizes 1000,5000,10000]
// [-runs 5] [-terraform terraform] [-terraform-max 5000] [-keep] [-profile K] [-distinct]
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const projects = 20

func main() {
	bin := flag.String("bin", "bin/sandboxer", "sandboxer binary")
	sizes := flag.String("sizes", "1000,5000,10000", "sandbox counts to plan, comma-separated")
	runs := flag.Int("runs", 5, "timed runs of each tool per size (after one warm-up)")
	tf := flag.String("terraform", "terraform", "terraform binary (skipped when not found)")
	tfMax := flag.Int("terraform-max", 5000, "largest size to run terraform at")
	keep := flag.Bool("keep", false, "keep the generated folders and print where they are")
	prof := flag.Int("profile", 0, "after the timed runs, profile this many plans of each size and print where their CPU goes")
	distinct := flag.Bool("distinct", false, "give every sandbox a database of its own, so no two blocks are alike")
	flag.Parse()
	if err := run(*bin, *sizes, *runs, *tf, *tfMax, *keep, *prof, *distinct); err != nil {
		fmt.Fprintln(os.Stderr, "benchplan:", err)
		os.Exit(1)
	}
}

// sample is one timed process.
type sample struct {
	wall, cpu time.Duration // cpu: user + system
	maxRSS    int64         // bytes
}

// result is one tool at one size.
type result struct {
	wall, cpu, rss []float64 // seconds, seconds, bytes
}

func (r *result) add(s sample) {
	r.wall = append(r.wall, s.wall.Seconds())
	r.cpu = append(r.cpu, s.cpu.Seconds())
	r.rss = append(r.rss, float64(s.maxRSS))
}

func run(bin, sizeList string, runs int, tfBin string, tfMax int, keep bool, prof int, distinct bool) error {
	abs, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	var ns []int
	for _, s := range strings.Split(sizeList, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < projects {
			return fmt.Errorf("-sizes: %q is not a count of at least %d", s, projects)
		}
		ns = append(ns, n)
	}
	tfPath, err := exec.LookPath(tfBin)
	if err != nil {
		fmt.Printf("terraform not found (%v): timing sandboxer alone\n\n", err)
		tfPath = ""
	}
	root, err := os.MkdirTemp("", "sbx-bench-plan-")
	if err != nil {
		return err
	}
	if keep {
		fmt.Println("workloads in", root)
	} else {
		defer os.RemoveAll(root)
	}
	fmt.Printf("load average before: %s\n", loadavg())

	type row struct {
		n       int
		sbx, tf result
	}
	var rows []row
	for _, n := range ns {
		sdir := filepath.Join(root, fmt.Sprintf("sandboxer-%d", n))
		if err := writeFile(sdir, "main.sbx.hcl", sandboxerConfig(n, distinct)); err != nil {
			return err
		}
		sbx := func() (sample, error) { return sandboxerPlan(abs, sdir, n) }
		var tfRun func() (sample, error)
		if tfPath != "" && n <= tfMax {
			tdir := filepath.Join(root, fmt.Sprintf("terraform-%d", n))
			if err := writeFile(tdir, "main.tf", terraformConfig(n, distinct)); err != nil {
				return err
			}
			// An empty CLI configuration: the machine's may name a file
			// that does not exist, and terraform warns about it.
			if err := writeFile(root, "terraformrc", ""); err != nil {
				return err
			}
			env := append(os.Environ(), "CHECKPOINT_DISABLE=1", "TF_IN_AUTOMATION=1",
				"TF_CLI_CONFIG_FILE="+filepath.Join(root, "terraformrc"))
			if err := terraformInit(tfPath, tdir, env); err != nil {
				return err
			}
			tfRun = func() (sample, error) { return terraformPlan(tfPath, tdir, env, n) }
		}
		r := row{n: n}
		// One warm-up each: page cache, and terraform's first run reads
		// its lock file and schemas.
		if _, err := sbx(); err != nil {
			return err
		}
		if tfRun != nil {
			if _, err := tfRun(); err != nil {
				return err
			}
		}
		for i := range runs {
			s, err := sbx()
			if err != nil {
				return err
			}
			r.sbx.add(s)
			line := fmt.Sprintf("n=%d run %d: sandboxer %v (cpu %v) %s", n, i+1, s.wall.Round(100*time.Microsecond), s.cpu.Round(time.Millisecond), mib(float64(s.maxRSS)))
			if tfRun != nil {
				t, err := tfRun()
				if err != nil {
					return err
				}
				r.tf.add(t)
				line += fmt.Sprintf(", terraform %v (cpu %v) %s", t.wall.Round(time.Millisecond), t.cpu.Round(time.Millisecond), mib(float64(t.maxRSS)))
			}
			fmt.Println(line)
		}
		rows = append(rows, r)
	}
	fmt.Printf("load average after: %s\n\n", loadavg())

	fmt.Printf("plan --refresh=false, empty state, N sandboxes in %d projects, median of %d interleaved runs\n", projects, runs)
	fmt.Printf("(wall time; cpu = user + system; RSS = peak resident set):\n")
	fmt.Printf("%7s  %10s %10s %10s  %10s %10s %10s  %7s %7s  %s\n",
		"N", "sandboxer", "cpu", "RSS", "terraform", "cpu", "RSS", "time ×", "RSS ×", "sandboxer per 1k")
	for _, r := range rows {
		sw, sc, sr := median(r.sbx.wall), median(r.sbx.cpu), median(r.sbx.rss)
		per := fmt.Sprintf("%.1f ms", sw*1000/float64(r.n)*1000)
		if len(r.tf.wall) == 0 {
			fmt.Printf("%7d  %7.1f ms %7.1f ms %10s  %10s %10s %10s  %7s %7s  %s\n", r.n, sw*1000, sc*1000, mib(sr), "-", "-", "-", "-", "-", per)
			continue
		}
		tw, tc, tr := median(r.tf.wall), median(r.tf.cpu), median(r.tf.rss)
		fmt.Printf("%7d  %7.1f ms %7.1f ms %10s  %8.2f s %8.2f s %10s  %6.1f× %6.1f×  %s\n", r.n, sw*1000, sc*1000, mib(sr), tw, tc, mib(tr), tw/sw, tr/sr, per)
	}
	if prof > 0 {
		for _, r := range rows {
			fmt.Printf("\nwhere the CPU of a plan of %d goes (%d profiled runs; phases overlap where one calls another):\n", r.n, prof)
			if err := profile(abs, filepath.Join(root, fmt.Sprintf("sandboxer-%d", r.n)), prof); err != nil {
				return err
			}
		}
	}
	return nil
}

// sandboxerConfig is N literal sandbox blocks spread over 20 projects, the
// shape of BenchmarkPlan1000/blocks: every fourth sandbox of a project asks
// for redis search, the others for pg_trgm.
func sandboxerConfig(n int, distinct bool) string {
	var b strings.Builder
	for p := range projects {
		fmt.Fprintf(&b, "project \"p%02d\" {\n  services = [\"postgres\", \"redis\"]\n  extensions = { postgres = [\"vector\"] }\n}\n\n", p)
	}
	for i := range n {
		fmt.Fprintf(&b, "sandbox \"s%05d\" {\n  project    = project.p%02d\n  extensions = %s\n  ttl        = \"4h\"\n%s}\n\n", i, i%projects, extensions(i), database(i, distinct, "  "))
	}
	return b.String()
}

// terraformConfig is the same: the projects as one local map, each
// sandbox a terraform_data resource whose input names its project's
// settings and its own.
func terraformConfig(n int, distinct bool) string {
	var b strings.Builder
	b.WriteString("locals {\n  projects = {\n")
	for p := range projects {
		fmt.Fprintf(&b, "    p%02d = {\n      services   = [\"postgres\", \"redis\"]\n      extensions = { postgres = [\"vector\"] }\n    }\n", p)
	}
	b.WriteString("  }\n}\n\n")
	for i := range n {
		fmt.Fprintf(&b, "resource \"terraform_data\" \"s%05d\" {\n  input = {\n    project    = local.projects.p%02d\n    extensions = %s\n    ttl        = \"4h\"\n%s  }\n}\n\n", i, i%projects, extensions(i), database(i, distinct, "    "))
	}
	return b.String()
}

// database is the argument -distinct adds: a database of the sandbox's
// own, which makes its block unlike every other (sandboxer decodes alike
// blocks once, config/sandbox_memo.go).
func database(i int, distinct bool, indent string) string {
	if !distinct {
		return ""
	}
	return fmt.Sprintf("%sdatabase   = \"db%05d\"\n", indent, i)
}

func extensions(i int) string {
	if i/projects%4 == 0 {
		return `{ redis = ["search"] }`
	}
	return `{ postgres = ["pg_trgm"] }`
}

// sandboxerPlan runs one plan and checks it creates all n sandboxes.
func sandboxerPlan(bin, dir string, n int) (sample, error) {
	out, s, err := timed(exec.Command(bin, "--chdir", dir, "plan", "--refresh=false", "--json"))
	if err != nil {
		return s, fmt.Errorf("sandboxer plan: %w", err)
	}
	var p struct {
		Summary struct{ Create int } `json:"summary"`
	}
	if err := json.Unmarshal(out, &p); err != nil {
		return s, fmt.Errorf("sandboxer plan --json: %w", err)
	}
	if p.Summary.Create != n {
		return s, fmt.Errorf("sandboxer plan creates %d, not %d", p.Summary.Create, n)
	}
	return s, nil
}

func terraformInit(tf, dir string, env []string) error {
	cmd := exec.Command(tf, "init", "-input=false", "-no-color")
	cmd.Dir, cmd.Env = dir, env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("terraform init: %v\n%s", err, out)
	}
	return nil
}

// terraformPlan runs one plan and checks it adds all n resources.
func terraformPlan(tf, dir string, env []string, n int) (sample, error) {
	cmd := exec.Command(tf, "plan", "-refresh=false", "-input=false", "-no-color")
	cmd.Dir, cmd.Env = dir, env
	out, s, err := timed(cmd)
	if err != nil {
		return s, fmt.Errorf("terraform plan: %w", err)
	}
	if want := fmt.Sprintf("Plan: %d to add, 0 to change, 0 to destroy.", n); !bytes.Contains(out, []byte(want)) {
		return s, fmt.Errorf("terraform plan does not say %q:\n%s", want, tail(out))
	}
	return s, nil
}

// timed runs cmd to its end and returns its stdout, wall time and peak
// resident memory.
func timed(cmd *exec.Cmd) ([]byte, sample, error) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	s := sample{wall: time.Since(start)}
	if cmd.ProcessState != nil {
		s.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			s.maxRSS = ru.Maxrss * 1024 // kilobytes on Linux
		}
	}
	if err != nil {
		return nil, s, fmt.Errorf("%v\n%s", err, tail(stderr.Bytes()))
	}
	return stdout.Bytes(), s, nil
}

func writeFile(dir, name, body string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600)
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func mib(b float64) string { return fmt.Sprintf("%.1f MiB", b/(1<<20)) }

func tail(b []byte) string {
	const keep = 2000
	if len(b) > keep {
		b = b[len(b)-keep:]
	}
	return string(b)
}
