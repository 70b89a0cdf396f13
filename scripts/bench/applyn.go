package main

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// The many-at-once comparison (issue 31): one `sandboxer apply` that
// creates n postgres[vector]+redis[search] sandboxes at once (apply's
// default parallelism), with templates on beside template = false,
// alternating so load drift hits both. The template of the bench image is
// made before the first timed run (the floor comparison's first run, or
// here when it is run alone; removed at the end), so every timed run with templates starts
// from a copy, as every apply after a machine's first does.
func applyManyBench(bin string, n, runs int) {
	pgID := strings.TrimSpace(docker("image", "inspect", "--format", "{{.Id}}", pgImage))
	defer removeTemplates(pgID)
	warm := sandboxerColdStartCfg(bin, -2, "volume", "")
	fmt.Printf("apply of %d: one sandbox first, to have the template: %v\n", n, warm.Round(time.Millisecond))
	var tpl, noTpl []time.Duration
	for i := range runs {
		tpl = append(tpl, applyMany(bin, n, ""))
		noTpl = append(noTpl, applyMany(bin, n, "  template = false\n"))
		fmt.Printf("apply of %d, run %d: from templates %v, template = false %v\n", n, i+1,
			tpl[i].Round(time.Millisecond), noTpl[i].Round(time.Millisecond))
	}
	fmt.Printf("\napply of %d postgres[vector]+redis[search] sandboxes at once, median of %d:\n", n, runs)
	fmt.Printf("  from templates      : %v\n", median(tpl).Round(time.Millisecond))
	fmt.Printf("  template = false    : %v\n", median(noTpl).Round(time.Millisecond))
	fmt.Printf("  ratio               : %.2fx\n\n", float64(median(tpl))/float64(median(noTpl)))
}

// applyMany times one apply that creates n sandboxes, then destroys them.
func applyMany(bin string, n int, extra string) time.Duration {
	dir, err := os.MkdirTemp("", "sbx-bench-many-")
	check(err)
	defer os.RemoveAll(dir)
	var b strings.Builder
	b.WriteString(strings.Replace(providerBlock("volume"), "provider \"docker\" {\n", "provider \"docker\" {\n"+extra, 1))
	for i := range n {
		fmt.Fprintf(&b, "\nsandbox \"m%02d\" {\n  project = project.bench\n}\n", i)
	}
	write(dir, b.String())
	start := time.Now()
	out := sandboxer(dir, bin, "apply", "--auto-approve")
	d := time.Since(start)
	if !strings.Contains(out, fmt.Sprintf("Sandboxes: %d created", n)) {
		fail("apply did not create %d sandboxes:\n%s", n, out)
	}
	sandboxer(dir, bin, "destroy", "--auto-approve", "--parallelism", "8")
	return d
}
