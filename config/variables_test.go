package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

const precedenceSrc = `
variable "s" {
  type    = string
  default = "default"
}
variable "n" {
  type    = number
  default = 1
}
variable "l" {
  type    = list(string)
  default = []
}
variable "any" {
  default = "default"
}
`

func TestVariablePrecedence(t *testing.T) {
	dir := t.TempDir()
	file := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	first := file("first.sbxvars", `s = "file1"`+"\n"+`n = 10`)
	second := file("second.sbxvars", `s = "file2"`)
	list := file("list.sbxvars", `l = ["from", "file"]`)
	jsonFile := file("vars.json", `{"s": "json", "n": 7}`)

	tests := []struct {
		name string
		in   Input
		want map[string]cty.Value
	}{
		{
			name: "defaults",
			want: map[string]cty.Value{"s": cty.StringVal("default"), "n": cty.NumberIntVal(1)},
		},
		{
			name: "environment over default; other variables untouched",
			in:   Input{Environ: []string{"SBX_VAR_s=env", "PATH=/bin", "SBX_VAR_undeclared=ignored"}},
			want: map[string]cty.Value{"s": cty.StringVal("env"), "n": cty.NumberIntVal(1)},
		},
		{
			name: "var file over environment",
			in:   Input{Environ: []string{"SBX_VAR_s=env", "SBX_VAR_n=5"}, VarFiles: []string{first}},
			want: map[string]cty.Value{"s": cty.StringVal("file1"), "n": cty.NumberIntVal(10)},
		},
		{
			name: "later var file over earlier",
			in:   Input{VarFiles: []string{first, second}},
			want: map[string]cty.Value{"s": cty.StringVal("file2"), "n": cty.NumberIntVal(10)},
		},
		{
			name: "JSON var file",
			in:   Input{VarFiles: []string{jsonFile}},
			want: map[string]cty.Value{"s": cty.StringVal("json"), "n": cty.NumberIntVal(7)},
		},
		{
			name: "--var over everything, whatever the order of Input fields",
			in: Input{
				Vars:     []string{"s=flag"},
				VarFiles: []string{first},
				Environ:  []string{"SBX_VAR_s=env"},
			},
			want: map[string]cty.Value{"s": cty.StringVal("flag"), "n": cty.NumberIntVal(10)},
		},
		{
			name: "later --var over earlier",
			in:   Input{Vars: []string{"s=one", "s=two"}},
			want: map[string]cty.Value{"s": cty.StringVal("two")},
		},
		{
			name: "string and untyped values are raw text",
			in:   Input{Vars: []string{`s="quoted" = yes`, "any=[1, 2]"}},
			want: map[string]cty.Value{"s": cty.StringVal(`"quoted" = yes`), "any": cty.StringVal("[1, 2]")},
		},
		{
			name: "other types parse as HCL expressions",
			in:   Input{Environ: []string{`SBX_VAR_l=["a", "b"]`}, Vars: []string{"n=2 * 21"}},
			want: map[string]cty.Value{
				"l": cty.ListVal([]cty.Value{cty.StringVal("a"), cty.StringVal("b")}),
				"n": cty.NumberIntVal(42),
			},
		},
		{
			name: "list from a var file",
			in:   Input{VarFiles: []string{list}},
			want: map[string]cty.Value{"l": cty.ListVal([]cty.Value{cty.StringVal("from"), cty.StringVal("file")})},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := load(t, precedenceSrc, tt.in)
			for name, want := range tt.want {
				got := cfg.Variables[name].Value
				if !got.RawEquals(want) {
					t.Errorf("var.%s = %#v, want %#v", name, got, want)
				}
			}
		})
	}
}

// TestVariableInputErrors covers problems that come from flags, the
// environment and var files rather than from the configuration.
func TestVariableInputErrors(t *testing.T) {
	dir := t.TempDir()
	badFile := filepath.Join(dir, "bad.sbxvars")
	if err := os.WriteFile(badFile, []byte("n = \"ten\"\nnope = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	src := precedenceSrc + `
variable "checked" {
  type    = string
  default = "ok"
  validation {
    condition     = length(var.checked) < 5
    error_message = "Must be shorter than 5 characters."
  }
}
variable "required" {
  type = string
}`
	type diag struct {
		Severity hcl.DiagnosticSeverity
		Summary  string
		Line     int // 0: no subject
		File     string
	}
	tests := []struct {
		name string
		in   Input
		want []diag
	}{
		{
			name: "required variable without value",
			want: []diag{{hcl.DiagError, "No value for required variable", 26, "main.sbx.hcl"}},
		},
		{
			name: "required satisfied by the environment",
			in:   Input{Environ: []string{"SBX_VAR_required=x"}},
		},
		{
			name: "undeclared and malformed --var",
			in:   Input{Vars: []string{"required=x", "nope=1", "novalue"}},
			want: []diag{
				{hcl.DiagError, "Value for undeclared variable", 0, ""},
				{hcl.DiagError, "Invalid --var option", 0, ""},
			},
		},
		{
			name: "unconvertible --var is blamed on the declaration",
			in:   Input{Vars: []string{"required=x", `n="ten"`}},
			want: []diag{{hcl.DiagError, "Invalid value for input variable", 6, "main.sbx.hcl"}},
		},
		{
			name: "a bare word for a number is a reference, as in Terraform",
			in:   Input{Vars: []string{"required=x", "n=ten"}},
			want: []diag{{hcl.DiagError, "Variables not allowed", 1, "<value for var.n>"}},
		},
		{
			name: "--var that is not an expression",
			in:   Input{Vars: []string{"required=x", "l=[unclosed"}},
			want: []diag{{hcl.DiagError, "Unterminated tuple constructor expression", 1, "<value for var.l>"}},
		},
		{
			name: "validation failure from --var is blamed on the rule",
			in:   Input{Vars: []string{"required=x", "checked=much too long"}},
			want: []diag{{hcl.DiagError, "Invalid value for variable", 22, "main.sbx.hcl"}},
		},
		{
			name: "var file: wrong type is an error, undeclared a warning",
			in:   Input{Vars: []string{"required=x"}, VarFiles: []string{badFile}},
			want: []diag{
				{hcl.DiagError, "Invalid value for input variable", 1, badFile},
				{hcl.DiagWarning, "Value for undeclared variable", 2, badFile},
			},
		},
		{
			name: "missing var file",
			in:   Input{Vars: []string{"required=x"}, VarFiles: []string{filepath.Join(dir, "missing")}},
			want: []diag{{hcl.DiagError, "Failed to read variables file", 0, ""}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, diags := LoadSources(".", map[string][]byte{"main.sbx.hcl": []byte(src)}, tt.in, DefaultCatalog())
			var got []diag
			for _, d := range diags {
				g := diag{Severity: d.Severity, Summary: d.Summary}
				if d.Subject != nil {
					g.Line, g.File = d.Subject.Start.Line, d.Subject.Filename
				}
				got = append(got, g)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s\n%s", diff, describeAll(diags))
			}
			for _, d := range diags {
				if d.Subject != nil && !strings.HasPrefix(d.Subject.Filename, "<") && cfg.Files[d.Subject.Filename] == nil {
					t.Errorf("%s is not in Config.Files", d.Subject.Filename)
				}
			}
		})
	}
}
