package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"time"
)

// phases are where a plan's CPU goes, as pprof -focus regexps over the
// whole process's profile (SANDBOXER_CPUPROFILE, which starts in main;
// start-up before main is timed apart, as `sandboxer version`).
var phases = []struct{ name, focus, ignore string }{
	{"parse (hcl syntax)", `config\.parseFiles`, ""},
	{"evaluation and decoding", `config\.LoadSourcesContext|config\.\(\*loader\)`, `config\.parseFiles`},
	{"state read", `sandboxer/state\.|bbolt`, ""},
	{"plan (diff, images)", `sandboxer/plan\.`, ""},
	{"JSON rendering", `internal/views\.`, ""},
	{"garbage collection", `runtime\.gcBgMarkWorker|runtime\.bgsweep|runtime\.gcAssist`, ""},
}

var shareRE = regexp.MustCompile(`accounting for ([0-9.]+)(ms|s)`)

// profile runs the plan of dir k times with a CPU profile each and prints
// each phase's CPU per run, from `go tool pprof` over all k profiles.
func profile(bin, dir string, k int) error {
	pdir, err := os.MkdirTemp("", "sbx-plan-prof-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(pdir)
	var files []string
	for i := range k {
		f := filepath.Join(pdir, fmt.Sprintf("plan-%d.prof", i))
		cmd := exec.Command(bin, "--chdir", dir, "plan", "--refresh=false", "--json")
		cmd.Env = append(os.Environ(), "SANDBOXER_CPUPROFILE="+f)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("profiled plan: %v\n%s", err, tail(out))
		}
		files = append(files, f)
	}
	startup, err := startupTime(bin, k)
	if err != nil {
		return err
	}
	fmt.Printf("  %-26s %7.1f ms wall (sandboxer version, median of %d)\n", "start-up (before main)", startup.Seconds()*1000, k)
	total, err := focused(bin, files, "", "")
	if err != nil {
		return err
	}
	for _, p := range phases {
		d, err := focused(bin, files, p.focus, p.ignore)
		if err != nil {
			return err
		}
		fmt.Printf("  %-26s %7.1f ms cpu  %4.0f%%\n", p.name, d.Seconds()*1000/float64(k), 100*d.Seconds()/total.Seconds())
	}
	fmt.Printf("  %-26s %7.1f ms cpu  (all sampled, main onwards)\n", "total", total.Seconds()*1000/float64(k))
	return nil
}

// focused is the CPU time of the samples whose stack matches focus
// ("": all of them), summed over files: with every node shown, the flat
// times pprof says its nodes account for are those samples' total.
func focused(bin string, files []string, focus, ignore string) (time.Duration, error) {
	args := []string{"tool", "pprof", "-top", "-nodecount=1000000", "-nodefraction=0"}
	if focus != "" {
		args = append(args, "-focus="+focus)
	}
	if ignore != "" {
		args = append(args, "-ignore="+ignore)
	}
	args = append(append(args, bin), files...)
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("go tool pprof: %v\n%s", err, tail(out))
	}
	m := shareRE.FindSubmatch(out)
	if m == nil {
		return 0, nil // no sample matched
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	if string(m[2]) == "s" {
		v *= 1000
	}
	return time.Duration(v * float64(time.Millisecond)), nil
}

// startupTime is the median wall time of `sandboxer version`: the
// process's start-up (loading, the runtime, package initialisation) and
// little else.
func startupTime(bin string, k int) (time.Duration, error) {
	var xs []float64
	for range k {
		_, s, err := timed(exec.Command(bin, "version"))
		if err != nil {
			return 0, err
		}
		xs = append(xs, s.wall.Seconds())
	}
	return time.Duration(median(xs) * float64(time.Second)), nil
}
