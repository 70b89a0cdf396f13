package views

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Diagnostics renders HCL diagnostics for people: severity and summary,
// the location as file:line:col, the source line with the range marked,
// then the detail.
func Diagnostics(w io.Writer, diags hcl.Diagnostics, files map[string]*hcl.File, c Colorizer) error {
	for _, d := range diags {
		label := c.Red("Error: ")
		if d.Severity == hcl.DiagWarning {
			label = c.Yellow("Warning: ")
		}
		fmt.Fprintf(w, "%s%s\n", label, c.Bold(d.Summary))
		if r := d.Subject; r != nil {
			fmt.Fprintf(w, "\n  on %s:%d:%d\n", r.Filename, r.Start.Line, r.Start.Column)
			if line, ok := sourceLine(files, r); ok {
				line, mark := clip(line, marker(line, r))
				fmt.Fprintf(w, "  %4d | %s\n", r.Start.Line, line)
				fmt.Fprintf(w, "       | %s\n", mark)
			}
		}
		if d.Detail != "" {
			fmt.Fprintf(w, "\n%s\n", d.Detail)
		}
		fmt.Fprintln(w)
	}
	return nil
}

// sourceLine returns the line a range starts on, tabs expanded so the
// marker lines up.
func sourceLine(files map[string]*hcl.File, r *hcl.Range) (string, bool) {
	f, ok := files[r.Filename]
	if !ok || f == nil {
		return "", false
	}
	// The line starts after the byte offset's preceding newline: cheaper
	// than splitting the whole file for every diagnostic.
	src := f.Bytes
	if r.Start.Line < 1 || r.Start.Byte < 0 || r.Start.Byte > len(src) {
		return "", false
	}
	begin := strings.LastIndexByte(string(src[:r.Start.Byte]), '\n') + 1
	end := len(src)
	if i := strings.IndexByte(string(src[r.Start.Byte:]), '\n'); i >= 0 {
		end = r.Start.Byte + i
	}
	return strings.TrimRight(string(src[begin:end]), "\r"), true
}

// snippetWidth is how much of a source line is shown around a range: a
// one-line file with a megabyte string must not be echoed whole.
const snippetWidth = 120

// clip cuts a long line and its marker to a window of snippetWidth runes
// that starts a little before the marked range, with "…" where cut.
func clip(line, mark string) (string, string) {
	runes, marks := []rune(line), []rune(mark)
	if len(runes) <= snippetWidth {
		return line, mark
	}
	start := max(strings.IndexRune(mark, '^'), 0)
	start = len([]rune(mark[:start]))
	from := max(start-snippetWidth/4, 0)
	to := min(from+snippetWidth, len(runes))
	l := string(runes[from:to])
	m := string(marks[min(from, len(marks)):min(to, len(marks))])
	if from > 0 {
		l, m = "…"+l, " "+m
	}
	if to < len(runes) {
		l += "…"
	}
	return l, m
}

// marker underlines the range on its first line with carets.
func marker(line string, r *hcl.Range) string {
	start := max(r.Start.Column-1, 0)
	runes := []rune(line)
	start = min(start, len(runes))
	end := len(runes)
	if r.End.Line == r.Start.Line {
		end = min(max(r.End.Column-1, start+1), len(runes))
	}
	pad := make([]rune, 0, start)
	for _, ch := range runes[:start] {
		if ch == '\t' {
			pad = append(pad, '\t')
		} else {
			pad = append(pad, ' ')
		}
	}
	return string(pad) + strings.Repeat("^", max(end-start, 1))
}

// JSONDiagnostics is the `validate --json` document, shaped like
// Terraform's so editors and CI annotators can read it.
type JSONDiagnostics struct {
	FormatVersion string           `json:"format_version"`
	Valid         bool             `json:"valid"`
	ErrorCount    int              `json:"error_count"`
	WarningCount  int              `json:"warning_count"`
	Diagnostics   []JSONDiagnostic `json:"diagnostics"`
}

// JSONDiagnostic is one diagnostic with its source range.
type JSONDiagnostic struct {
	Severity string     `json:"severity"`
	Summary  string     `json:"summary"`
	Detail   string     `json:"detail,omitempty"`
	Range    *JSONRange `json:"range,omitempty"`
}

// jsonDiagnostics is diags in the JSON shape validate --json prints.
func jsonDiagnostics(diags hcl.Diagnostics) []JSONDiagnostic {
	out := []JSONDiagnostic{}
	for _, d := range diags {
		jd := JSONDiagnostic{Severity: "error", Summary: d.Summary, Detail: d.Detail}
		if d.Severity == hcl.DiagWarning {
			jd.Severity = "warning"
		}
		if d.Subject != nil {
			r := d.Subject
			jd.Range = &JSONRange{Filename: r.Filename,
				Start: JSONPos{r.Start.Line, r.Start.Column, r.Start.Byte},
				End:   JSONPos{r.End.Line, r.End.Column, r.End.Byte}}
		}
		out = append(out, jd)
	}
	return out
}

// JSONRange is a source range with 1-based lines and columns.
type JSONRange struct {
	Filename string  `json:"filename"`
	Start    JSONPos `json:"start"`
	End      JSONPos `json:"end"`
}

// JSONPos is one position in a file.
type JSONPos struct {
	Line   int `json:"line"`
	Column int `json:"column"`
	Byte   int `json:"byte"`
}

// DiagnosticsJSON writes the validate document for diags.
func DiagnosticsJSON(w io.Writer, diags hcl.Diagnostics) error {
	doc := JSONDiagnostics{FormatVersion: "1.0", Diagnostics: jsonDiagnostics(diags)}
	for _, d := range diags {
		if d.Severity == hcl.DiagWarning {
			doc.WarningCount++
		} else {
			doc.ErrorCount++
		}
	}
	doc.Valid = doc.ErrorCount == 0
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}
