package config

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// TestFileSuffix marks the test files of `sandboxer test`, Terraform's
// *.tftest.hcl: in the configuration directory and in its tests
// directory.
const TestFileSuffix = ".sbtest.hcl"

// TestDir is where test files are looked for besides the configuration
// directory (Terraform's -test-directory default).
const TestDir = "tests"

var (
	testFileSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
		{Type: "run", LabelNames: []string{"name"}}, {Type: "variables"}}}
	runSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "command"}, {Name: "expect_failures"}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "variables"}, {Type: "assert"}},
	}
)

// Test commands a run block can name.
const (
	TestCommandPlan  = "plan"
	TestCommandApply = "apply"
)

// TestFile is one *.sbtest.hcl file: variables for every run, then the
// run blocks in the order they are written.
type TestFile struct {
	// Name is the file's path relative to the configuration directory
	// (main.sbtest.hcl, tests/ci.sbtest.hcl), as diagnostics show it.
	Name      string
	File      *hcl.File
	Variables []VarValue
	Runs      []*TestRun
}

// TestRun is a run block: plan or apply the configuration with the
// file's variables and its own (which win), then check its assertions.
type TestRun struct {
	Name      string
	Command   string // TestCommandPlan or TestCommandApply (the default)
	Variables []VarValue
	Asserts   []*Assert
	// ExpectFailures are check blocks (check.NAME) and variables
	// (var.NAME) that must fail for the run to pass.
	ExpectFailures []ExpectedFailure
	DeclRange      hcl.Range
}

// ExpectedFailure is one entry of expect_failures.
type ExpectedFailure struct {
	Kind  string // "check" or "var"
	Name  string
	Range hcl.Range
}

// Addr is the entry as written: check.NAME or var.NAME.
func (e ExpectedFailure) Addr() string { return e.Kind + "." + e.Name }

// LoadTestFiles reads and decodes the test files of dir and of
// dir/tests, in name order. filter, when not empty, keeps only the
// files named (as Name, or their base name).
func LoadTestFiles(dir string, filter []string) ([]*TestFile, hcl.Diagnostics) {
	var names []string
	for _, sub := range []string{"", TestDir} {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			if sub != "" && os.IsNotExist(err) {
				continue
			}
			return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Failed to read the test files",
				Detail: fmt.Sprintf("Cannot list %s: %s.", displayDir(filepath.Join(dir, sub)), err)}}
		}
		for _, e := range entries {
			if !e.IsDir() && strings.HasSuffix(e.Name(), TestFileSuffix) {
				names = append(names, filepath.ToSlash(filepath.Join(sub, e.Name())))
			}
		}
	}
	sort.Strings(names)
	var diags hcl.Diagnostics
	if len(filter) > 0 {
		kept := names[:0:0]
		for _, want := range filter {
			found := false
			for _, n := range names {
				if n == filepath.ToSlash(filepath.Clean(want)) {
					kept, found = append(kept, n), true
				}
			}
			if !found {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "No such test file",
					Detail: fmt.Sprintf("--filter %s names no %s file in %s or its %s directory.", want, TestFileSuffix, displayDir(dir), TestDir)})
			}
		}
		names = kept
	}
	var files []*TestFile
	for _, n := range names {
		src, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Failed to read test file",
				Detail: fmt.Sprintf("Cannot read %s: %s.", n, err)})
			continue
		}
		tf, d := DecodeTestFile(n, src)
		diags = append(diags, d...)
		if tf != nil {
			files = append(files, tf)
		}
	}
	return files, diags
}

// DecodeTestFile decodes one test file. The file is returned even with
// errors (File set, for rendering), unless it does not parse at all.
func DecodeTestFile(name string, src []byte) (*TestFile, hcl.Diagnostics) {
	f, diags := hclsyntax.ParseConfig(src, name, hcl.InitialPos)
	if f == nil {
		return nil, diags
	}
	tf := &TestFile{Name: name, File: f}
	if diags.HasErrors() {
		return tf, diags
	}
	content, d := f.Body.Content(testFileSchema)
	diags = append(diags, d...)
	seen := map[string]hcl.Range{}
	var varsSeen *hcl.Range
	for _, b := range content.Blocks {
		switch b.Type {
		case "variables":
			if varsSeen != nil {
				diags = append(diags, duplicateVariablesDiag(*varsSeen, b.DefRange))
				continue
			}
			varsSeen = b.DefRange.Ptr()
			vals, d := decodeTestVariables(b)
			diags = append(diags, d...)
			tf.Variables = vals
		case "run":
			name := b.Labels[0]
			if !validName(name) {
				diags = append(diags, invalidNameDiag("run", name, b.LabelRanges[0]))
				continue
			}
			if prev, ok := seen[name]; ok {
				diags = append(diags, errorDiag("Duplicate run block",
					fmt.Sprintf("A run named %q was already declared at %s. Run names must be unique within a test file.", name, prev), b.DefRange))
				continue
			}
			seen[name] = b.DefRange
			r, d := decodeRun(b)
			diags = append(diags, d...)
			if r != nil {
				tf.Runs = append(tf.Runs, r)
			}
		}
	}
	return tf, diags
}

func decodeRun(b *hcl.Block) (*TestRun, hcl.Diagnostics) {
	content, diags := b.Body.Content(runSchema)
	if diags.HasErrors() {
		return nil, diags
	}
	r := &TestRun{Name: b.Labels[0], Command: TestCommandApply, DeclRange: b.DefRange}
	if a, ok := content.Attributes["command"]; ok {
		switch kw := hcl.ExprAsKeyword(a.Expr); kw {
		case TestCommandPlan, TestCommandApply:
			r.Command = kw
		default:
			diags = append(diags, errorDiag("Invalid run command",
				"The command of a run block is plan or apply, written without quotes (command = plan).", a.Expr.Range()))
		}
	}
	if a, ok := content.Attributes["expect_failures"]; ok {
		exprs, d := hcl.ExprList(a.Expr)
		diags = append(diags, d...)
		for _, e := range exprs {
			tr, d := hcl.AbsTraversalForExpr(e)
			kind, name, ok := "", "", false
			if !d.HasErrors() && len(tr) == 2 {
				if attr, isAttr := tr[1].(hcl.TraverseAttr); isAttr {
					kind, name, ok = tr.RootName(), attr.Name, tr.RootName() == "check" || tr.RootName() == "var"
				}
			}
			if !ok {
				diags = append(diags, errorDiag("Invalid expect_failures entry",
					"expect_failures lists check blocks (check.NAME) and variables (var.NAME) whose checks must fail.", e.Range()))
				continue
			}
			r.ExpectFailures = append(r.ExpectFailures, ExpectedFailure{Kind: kind, Name: name, Range: e.Range()})
		}
	}
	var varsSeen *hcl.Range
	for _, nb := range content.Blocks {
		switch nb.Type {
		case "variables":
			if varsSeen != nil {
				diags = append(diags, duplicateVariablesDiag(*varsSeen, nb.DefRange))
				continue
			}
			varsSeen = nb.DefRange.Ptr()
			vals, d := decodeTestVariables(nb)
			diags = append(diags, d...)
			r.Variables = vals
		case "assert":
			ac, d := nb.Body.Content(assertSchema)
			diags = append(diags, d...)
			if d.HasErrors() {
				continue
			}
			r.Asserts = append(r.Asserts, &Assert{Condition: ac.Attributes["condition"].Expr, ErrorMessage: ac.Attributes["error_message"].Expr})
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return r, diags
}

// decodeTestVariables evaluates a variables block: constant values (and
// function-free expressions of them); a test's variables do not refer to
// anything.
func decodeTestVariables(b *hcl.Block) ([]VarValue, hcl.Diagnostics) {
	attrs, diags := b.Body.JustAttributes()
	var vals []VarValue
	for _, a := range sortedAttributes(attrs) {
		v, d := a.Expr.Value(nil)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		vals = append(vals, VarValue{Name: a.Name, Value: v, Range: a.Expr.Range()})
	}
	return vals, diags
}

// CheckTestRun reports what a run block names that the configuration
// lacks: an expect_failures entry without its check block or variable.
func (c *Config) CheckTestRun(r *TestRun) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, e := range r.ExpectFailures {
		if e.Kind == "check" && c.CheckNamed(e.Name) == nil {
			diags = append(diags, errorDiag("Unknown check block",
				fmt.Sprintf("expect_failures names check.%s, but the configuration has no check block %q.", e.Name, e.Name), e.Range))
		}
		if e.Kind == "var" && c.Variables[e.Name] == nil {
			diags = append(diags, errorDiag("Unknown variable",
				fmt.Sprintf("expect_failures names var.%s, but the configuration declares no variable %q.", e.Name, e.Name), e.Range))
		}
	}
	return diags
}

// CheckNamed is the check block of that name, or nil.
func (c *Config) CheckNamed(name string) *Check {
	for _, chk := range c.Checks {
		if chk.Name == name {
			return chk
		}
	}
	return nil
}

func duplicateVariablesDiag(prev, this hcl.Range) *hcl.Diagnostic {
	return errorDiag("Duplicate variables block",
		fmt.Sprintf("A variables block was already written at %s; put every value in that one.", prev), this)
}
