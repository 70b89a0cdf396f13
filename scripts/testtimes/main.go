// Command testtimes reads `go test -json` on its input and writes what
// `go test` without -json would have written (each package's result
// line, and the whole output of every test that failed, as it failed),
// then the slowest tests: CI's per-test figures without a verbose log.
//
// Usage: go test -json ./... | go run ./scripts/testtimes [-top 20]
//
// It reads its input to the end whatever it holds, so a pipeline's exit
// status stays go test's (set -o pipefail).
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

// event is one line of test2json (go doc test2json).
type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

type timing struct {
	secs          float64
	pkg, test, as string
}

func main() {
	top := flag.Int("top", 20, "how many of the slowest tests to list")
	flag.Parse()
	if err := run(os.Stdin, os.Stdout, *top); err != nil {
		fmt.Fprintln(os.Stderr, "testtimes:", err)
		os.Exit(1)
	}
}

func run(in io.Reader, out io.Writer, top int) error {
	buf := map[[2]string][]string{} // (package, test) → its output so far
	var times []timing
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &e) != nil {
			fmt.Fprintf(out, "%s\n", line) // not an event: pass it on
			continue
		}
		key := [2]string{e.Package, e.Test}
		switch e.Action {
		case "output", "build-output":
			if e.Test == "" {
				if e.Output != "PASS\n" {
					io.WriteString(out, e.Output)
				}
				continue
			}
			buf[key] = append(buf[key], e.Output)
		case "pass", "fail", "skip":
			if e.Test == "" {
				continue
			}
			if e.Action == "fail" {
				io.WriteString(out, strings.Join(buf[key], ""))
			}
			delete(buf, key)
			if !strings.Contains(e.Test, "/") {
				times = append(times, timing{e.Elapsed, e.Package, e.Test, e.Action})
			}
		}
	}
	if err := sc.Err(); err != nil {
		return err
	}
	// Output of tests that never ended (a timeout's panic names them).
	for key, lines := range buf {
		fmt.Fprintf(out, "--- output of %s %s, which did not end:\n%s", key[0], key[1], strings.Join(lines, ""))
	}
	if top <= 0 || len(times) == 0 {
		return nil
	}
	sort.Slice(times, func(i, j int) bool { return times[i].secs > times[j].secs })
	fmt.Fprintf(out, "\nslowest tests (seconds; parallel tests overlap)\n")
	for _, t := range times[:min(top, len(times))] {
		fmt.Fprintf(out, "%8.1f  %s %s %s\n", t.secs, t.as, t.pkg, t.test)
	}
	return nil
}
