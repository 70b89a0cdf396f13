package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/pmezard/go-difflib/difflib"
	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/config"
)

// FmtOptions are the flags of `sandboxer fmt`.
type FmtOptions struct {
	f     *Factory
	Check bool
	Diff  bool
	Files []string
}

func newFmtCmd(f *Factory, runF func(*FmtOptions) error) *cobra.Command {
	opts := &FmtOptions{f: f}
	cmd := &cobra.Command{
		Use:   "fmt [FILE...]",
		Short: "Rewrite configuration files in canonical format",
		Long: "Rewrite every *.sbx.hcl file of the configuration directory, and the\n" +
			"*.sbtest.hcl test files there and in tests/ (or the FILEs given), in canonical\n" +
			"HCL layout and print the names of the files it changed.\n" +
			"--check changes nothing and exits 1 if any file is not formatted; --diff\n" +
			"prints the changes. Results are file names, one a line: there is no JSON\n" +
			"form.",
		Example: "  sandboxer fmt\n" +
			"  sandboxer fmt --check --diff",
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Files = args
			if runF != nil {
				return runF(opts)
			}
			return fmtRun(opts)
		},
	}
	cmd.Flags().BoolVar(&opts.Check, "check", false, "do not write; exit 1 if any file needs formatting")
	cmd.Flags().BoolVar(&opts.Diff, "diff", false, "print the changes as a unified diff")
	return cmd
}

func fmtRun(opts *FmtOptions) error {
	f := opts.f
	files := opts.Files
	if len(files) == 0 {
		// The configuration, and the test files of sandboxer test beside it
		// and in tests/ (as terraform fmt formats *.tftest.hcl).
		var matches []string
		for _, pattern := range []string{"*" + config.FileSuffix, "*" + config.TestFileSuffix, filepath.Join(config.TestDir, "*"+config.TestFileSuffix)} {
			m, err := filepath.Glob(filepath.Join(f.Dir(), pattern))
			if err != nil {
				return err
			}
			matches = append(matches, m...)
		}
		sort.Strings(matches)
		for _, m := range matches {
			// validate and plan read regular files only; so does fmt.
			if info, err := os.Stat(m); err == nil && info.Mode().IsRegular() {
				files = append(files, m)
			}
		}
	}
	var diags hcl.Diagnostics
	sources := map[string]*hcl.File{}
	unformatted := 0
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("fmt: %w", err)
		}
		out, d := config.Format(path, src)
		if d.HasErrors() {
			diags = append(diags, d...)
			sources[path] = &hcl.File{Bytes: src}
			continue
		}
		if bytes.Equal(src, out) {
			continue
		}
		unformatted++
		fmt.Fprintln(f.IO.Out, path)
		if opts.Diff {
			ud := difflib.UnifiedDiff{A: difflib.SplitLines(string(src)), B: difflib.SplitLines(string(out)),
				FromFile: "old/" + path, ToFile: "new/" + path, Context: 3}
			text, err := difflib.GetUnifiedDiffString(ud)
			if err != nil {
				return err
			}
			fmt.Fprint(f.IO.Out, text)
		}
		if !opts.Check {
			info, err := os.Stat(path)
			if err != nil {
				return fmt.Errorf("fmt: %w", err)
			}
			if err := os.WriteFile(path, out, info.Mode().Perm()); err != nil {
				return fmt.Errorf("fmt: write %s: %w", path, err)
			}
		}
	}
	if diags.HasErrors() {
		renderDiagsFiles(f, sources, diags)
		return errReported
	}
	if opts.Check && unformatted > 0 {
		return &ExitError{Code: 1, Err: fmt.Errorf("%d %s not canonically formatted; run sandboxer fmt",
			unformatted, plural(unformatted, "file is", "files are"))}
	}
	return nil
}
