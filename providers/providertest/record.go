package providertest

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

// The conformance table (docs/conformance.md) is made from what the
// suite ran: with SANDBOXER_RECORD_CONFORMANCE=1, Run writes one file per
// runtime and service set under testdata/conformance of this package,
// saying which capability passed, failed or did not run; Table renders
// every file as the docs show it, and a docs test fails when the page
// differs. A capability is a test of the suite.

// RecordEnv switches recording on.
const RecordEnv = "SANDBOXER_RECORD_CONFORMANCE"

// Outcomes of one capability.
const (
	Passed  = "pass"
	Failed  = "fail"
	Skipped = "skip"
)

// Result is one recorded run of the suite.
type Result struct {
	Runtime  string            `json:"runtime"`
	Services []string          `json:"services"`
	Outcomes map[string]string `json:"outcomes"` // capability → Passed, Failed, Skipped
}

// RecordDir is where results are kept.
func RecordDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "testdata", "conformance")
}

func (r Result) write() error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	name := r.Runtime + "-" + strings.Join(r.Services, "+") + ".json"
	if err := os.MkdirAll(RecordDir(), 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(RecordDir(), name), append(b, '\n'), 0o644)
}

// Capabilities are the suite's tests, in the table's order, with what
// each shows.
func Capabilities() [][2]string {
	return [][2]string{
		{"CreateProbeDelete", "create, probe with the handed-out credentials, delete, gone"},
		{"ReplaceNewBeforeOld", "superset replace: the new generation beside the old, fresh credentials"},
		{"WrongCredentialsRefused", "a wrong password is refused, no secret in the error"},
		{"DeleteOfUnknownSucceeds", "delete is idempotent"},
		{"CheckRejectsUnknownService", "image check: features Create provides are reported"},
		{"CancelledCreateFails", "a cancelled create leaves nothing"},
		{"Inventory", "what exists is found again by its labels"},
		{"NetworkChecker", "user networks are checked"},
		{"Pinger", "the runtime answers"},
		{"RotateCredentials", "warm-pool claim: credentials bound at claim time (rotation in place)"},
		{"DataRoundTrip", "snapshot/restore/reset and carried data through the runtime's exec"},
	}
}

// Table renders every recorded result as a markdown table: one row per
// service and runtime, one column per capability.
func Table(dir string) (string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return "", err
	}
	type row struct {
		service, runtime string
		outcomes         map[string]string
	}
	var rows []row
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		var r Result
		if err := json.Unmarshal(b, &r); err != nil {
			return "", fmt.Errorf("%s: %w", f, err)
		}
		for _, svc := range r.Services {
			rows = append(rows, row{svc, r.Runtime, r.Outcomes})
		}
	}
	slices.SortFunc(rows, func(a, b row) int {
		return strings.Compare(a.service+" "+a.runtime, b.service+" "+b.runtime)
	})
	var sb strings.Builder
	sb.WriteString("| service | runtime |")
	for i := range Capabilities() {
		fmt.Fprintf(&sb, " %d |", i+1)
	}
	sb.WriteString("\n|---|---|" + strings.Repeat("---|", len(Capabilities())) + "\n")
	for _, r := range rows {
		fmt.Fprintf(&sb, "| %s | %s |", r.service, r.runtime)
		for _, c := range Capabilities() {
			mark := "–"
			switch r.outcomes[c[0]] {
			case Passed:
				mark = "✓"
			case Failed:
				mark = "✗"
			}
			sb.WriteString(" " + mark + " |")
		}
		sb.WriteString("\n")
	}
	sb.WriteString("\n")
	for i, c := range Capabilities() {
		fmt.Fprintf(&sb, "%d. `%s`: %s\n", i+1, c[0], c[1])
	}
	return sb.String(), nil
}
