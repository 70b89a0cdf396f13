package views

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/config"
)

// The output of `sandboxer test`, as Terraform's `terraform test` prints
// it: a line per file and per run as they end, then a summary; and the
// JUnit XML report Terraform's -junit-xml writes.

// TestFileStart is "main.sbtest.hcl... in progress".
func TestFileStart(w io.Writer, f *sandboxer.TestFileResult) {
	fmt.Fprintf(w, "%s... in progress\n", f.Name)
}

// TestRun is `  run "name"... pass`.
func TestRun(w io.Writer, r *sandboxer.TestRunResult, c Colorizer) {
	fmt.Fprintf(w, "  run %q... %s\n", r.Name, testStatus(r.Status, c))
}

// TestTeardown is "main.sbtest.hcl... tearing down".
func TestTeardown(w io.Writer, f *sandboxer.TestFileResult) {
	fmt.Fprintf(w, "%s... tearing down\n", f.Name)
}

// TestFileDone is "main.sbtest.hcl... pass".
func TestFileDone(w io.Writer, f *sandboxer.TestFileResult, c Colorizer) {
	fmt.Fprintf(w, "%s... %s\n", f.Name, testStatus(f.Status, c))
}

// TestSummary is "Success! 2 passed, 0 failed." or "Failure! …", with
// ", N skipped" when runs were skipped.
func TestSummary(w io.Writer, r *sandboxer.TestReport, c Colorizer) {
	passed, failed, skipped := r.Counts()
	counts := fmt.Sprintf("%d passed, %d failed", passed, failed)
	if skipped > 0 {
		counts += fmt.Sprintf(", %d skipped", skipped)
	}
	if r.Failed() {
		fmt.Fprintf(w, "\n%s %s.\n", c.Red(c.Bold("Failure!")), counts)
		return
	}
	fmt.Fprintf(w, "\n%s %s.\n", c.Green(c.Bold("Success!")), counts)
}

func testStatus(s sandboxer.TestStatus, c Colorizer) string {
	switch s {
	case sandboxer.TestPass:
		return c.Green(string(s))
	case sandboxer.TestSkip:
		return c.Yellow(string(s))
	}
	return c.Red(string(s))
}

// TestJSON is the report as one JSON object, for tools: every file
// with its runs, their status, seconds and diagnostics (validate
// --json's shape), and the counts.
func TestJSON(w io.Writer, r *sandboxer.TestReport) error {
	type run struct {
		Name        string           `json:"name"`
		Command     string           `json:"command"`
		Status      string           `json:"status"`
		Seconds     float64          `json:"seconds"`
		Diagnostics []JSONDiagnostic `json:"diagnostics"`
	}
	type file struct {
		Name        string           `json:"name"`
		Status      string           `json:"status"`
		Runs        []run            `json:"runs"`
		Diagnostics []JSONDiagnostic `json:"diagnostics"`
	}
	passed, failed, skipped := r.Counts()
	doc := struct {
		Status      string           `json:"status"`
		Passed      int              `json:"passed"`
		Failed      int              `json:"failed"`
		Skipped     int              `json:"skipped"`
		Files       []file           `json:"files"`
		Diagnostics []JSONDiagnostic `json:"diagnostics"`
	}{Status: "pass", Passed: passed, Failed: failed, Skipped: skipped, Files: []file{}, Diagnostics: jsonDiagnostics(r.Diagnostics)}
	if r.Failed() {
		doc.Status = "fail"
	}
	for _, f := range r.Files {
		jf := file{Name: f.Name, Status: string(f.Status), Runs: []run{}, Diagnostics: jsonDiagnostics(f.Diagnostics)}
		for _, rr := range f.Runs {
			jf.Runs = append(jf.Runs, run{Name: rr.Name, Command: rr.Command, Status: string(rr.Status),
				Seconds: rr.Duration.Seconds(), Diagnostics: jsonDiagnostics(rr.Diagnostics)})
		}
		doc.Files = append(doc.Files, jf)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

// The JUnit XML shape Terraform writes (and CI systems read): a
// testsuite per file, a testcase per run.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name      string      `xml:"name,attr"`
	Tests     int         `xml:"tests,attr"`
	Skipped   int         `xml:"skipped,attr"`
	Failures  int         `xml:"failures,attr"`
	Errors    int         `xml:"errors,attr"`
	Time      string      `xml:"time,attr"`
	Timestamp string      `xml:"timestamp,attr"`
	Cases     []junitCase `xml:"testcase"`
	SystemErr *junitText  `xml:"system-err,omitempty"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr,omitempty"`
	Timestamp string        `xml:"timestamp,attr,omitempty"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitProblem `xml:"skipped,omitempty"`
	SystemErr *junitText    `xml:"system-err,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Body    string `xml:",cdata"`
}

type junitText struct {
	Body string `xml:",cdata"`
}

// TestJUnit writes the report as JUnit XML. The diagnostics of a failed
// or errored run are its failure's or error's text, without colour.
func TestJUnit(w io.Writer, r *sandboxer.TestReport) error {
	doc := junitSuites{}
	for _, f := range r.Files {
		s := junitSuite{Name: f.Name, Tests: len(f.Runs), Time: seconds(f.Duration), Timestamp: stamp(f.Started)}
		for _, run := range f.Runs {
			c := junitCase{Name: run.Name, Classname: f.Name}
			if run.Status != sandboxer.TestSkip {
				c.Time, c.Timestamp = seconds(run.Duration), stamp(run.Started)
			}
			text := diagText(run.Diagnostics, f.Files)
			switch run.Status {
			case sandboxer.TestFail:
				s.Failures++
				c.Failure = &junitProblem{Message: failureMessage(run.Diagnostics), Body: text}
			case sandboxer.TestError:
				s.Errors++
				c.Error = &junitProblem{Message: failureMessage(run.Diagnostics), Body: text}
			case sandboxer.TestSkip:
				s.Skipped++
				c.Skipped = &junitProblem{Message: "Skipped: an earlier run of the file failed with an error"}
			default:
				if text != "" { // warnings of check blocks
					c.SystemErr = &junitText{Body: text}
				}
			}
			s.Cases = append(s.Cases, c)
		}
		if len(f.Diagnostics) > 0 {
			s.SystemErr = &junitText{Body: diagText(f.Diagnostics, f.Files)}
		}
		doc.Suites = append(doc.Suites, s)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

// failureMessage is the first error's own words (an assertion's
// error_message), and how many more there are.
func failureMessage(diags hcl.Diagnostics) string {
	var errs hcl.Diagnostics
	for _, d := range diags {
		if d.Severity == hcl.DiagError {
			errs = append(errs, d)
		}
	}
	if len(errs) == 0 {
		return "failed"
	}
	msg, _, _ := strings.Cut(errs[0].Summary+": "+config.Message(errs[0]), "\n")
	if len(errs) > 1 {
		msg += fmt.Sprintf(" (and %d more)", len(errs)-1)
	}
	return msg
}

func diagText(diags hcl.Diagnostics, files map[string]*hcl.File) string {
	if len(diags) == 0 {
		return ""
	}
	var b bytes.Buffer
	_ = Diagnostics(&b, diags, files, Colorizer{})
	return strings.TrimRight(b.String(), "\n")
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}
