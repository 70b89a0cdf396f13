package config

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// FileSuffix marks the files that make up a configuration.
const FileSuffix = ".sbx.hcl"

// fileSchema is the top level of every configuration file.
var fileSchema = &hcl.BodySchema{
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "variable", LabelNames: []string{"name"}},
		{Type: "locals"},
		{Type: "provider", LabelNames: []string{"name"}},
		{Type: "project", LabelNames: []string{"name"}},
		{Type: "sandbox", LabelNames: []string{"name"}},
		{Type: "output", LabelNames: []string{"name"}},
		{Type: "moved"},   // moved.go
		{Type: "removed"}, // moved.go
		{Type: "check", LabelNames: []string{"name"}}, // check.go
		{Type: "sandboxer"},                           // backend.go
	},
}

// Load decodes every *.sbx.hcl file directly in dir, in name order.
//
// The returned *Config is never nil: even when the diagnostics hold errors,
// its Dir, Sources and Files are populated so the caller can render the
// diagnostics with source snippets. Its other fields are then partial.
func Load(dir string, in Input, cat *Catalog) (*Config, hcl.Diagnostics) {
	return LoadContext(context.Background(), dir, in, cat)
}

// LoadContext is Load that stops evaluating once ctx is done (a signal):
// the diagnostics then say the configuration was not fully checked.
func LoadContext(ctx context.Context, dir string, in Input, cat *Catalog) (*Config, hcl.Diagnostics) {
	sources, diags := readDir(dir)
	if diags.HasErrors() {
		return newConfig(dir), diags
	}
	cfg, more := LoadSourcesContext(ctx, dir, sources, in, cat)
	return cfg, append(diags, more...)
}

// LoadSources decodes a configuration from in-memory files, keyed by the
// file name that diagnostics should show. Every entry is decoded whatever
// its name; they are taken in name order. It is used for saved plans and
// fuzzing, and returns a non-nil *Config as Load does.
func LoadSources(dir string, sources map[string][]byte, in Input, cat *Catalog) (*Config, hcl.Diagnostics) {
	return LoadSourcesContext(context.Background(), dir, sources, in, cat)
}

// LoadSourcesContext is LoadSources that stops once ctx is done.
func LoadSourcesContext(ctx context.Context, dir string, sources map[string][]byte, in Input, cat *Catalog) (*Config, hcl.Diagnostics) {
	if cat == nil {
		cat = DefaultCatalog()
	}
	cfg := newConfig(dir)
	names := make([]string, 0, len(sources))
	for name, src := range sources {
		names = append(names, name)
		cfg.Sources[name] = src
	}
	sort.Strings(names)
	if len(names) == 0 {
		return cfg, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "No configuration files",
			Detail:   fmt.Sprintf("There are no %s files in %s. Run \"sandboxer init\" to write a starter configuration, or use --chdir to point at one.", FileSuffix, displayDir(dir)),
		}}
	}

	l := &loader{cfg: cfg, cat: cat, in: in, ev: newEvaluator(ctx, cfg), unknownServices: map[string]bool{}}
	var diags hcl.Diagnostics
	var blocks hcl.Blocks
	files, fileDiags := parseFiles(names, sources)
	for i, name := range names {
		f := files[i]
		diags = append(diags, fileDiags[i]...)
		if f == nil {
			continue
		}
		cfg.Files[name] = f
		content, d := f.Body.Content(fileSchema)
		diags = append(diags, d...)
		blocks = append(blocks, content.Blocks...)
	}
	diags = append(diags, l.decode(blocks)...)
	if err := ctx.Err(); err != nil {
		// What was reported is incomplete and may hold errors that are
		// only the interruption showing through: say so first.
		diags = append(hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Evaluation interrupted",
			Detail:   fmt.Sprintf("Loading the configuration was stopped (%s) before it was fully checked.", err),
		}}, diags...)
	}
	return cfg, dedupe(diags)
}

// loader carries what the decode phases share.
type loader struct {
	cfg *Config
	cat *Catalog
	in  Input
	ev  *evaluator
	// unknownServices names projects whose services list failed to decode.
	unknownServices map[string]bool
}

// decode runs the phases in dependency order: variables, locals, then
// everything that may reference them. Sandboxes and outputs are decoded
// after the evaluator settles: nothing they do changes what var, local or
// project evaluate to.
func (l *loader) decode(blocks hcl.Blocks) hcl.Diagnostics {
	byType := map[string]hcl.Blocks{}
	for _, b := range blocks {
		byType[b.Type] = append(byType[b.Type], b)
	}
	var diags hcl.Diagnostics
	phases := []func() hcl.Diagnostics{
		func() hcl.Diagnostics { return l.decodeVariables(byType["variable"]) },
		func() hcl.Diagnostics { return l.decodeLocals(byType["locals"]) },
		func() hcl.Diagnostics { return l.decodeProvider(byType["provider"]) },
		func() hcl.Diagnostics { return l.decodeProjects(byType["project"]) },
		func() hcl.Diagnostics { l.ev.settle(); return l.decodeSandboxes(byType["sandbox"]) },
		func() hcl.Diagnostics { return l.decodeOutputs(byType["output"]) },
		func() hcl.Diagnostics { return l.decodeMoved(byType["moved"]) },
		func() hcl.Diagnostics { return l.decodeRemoved(byType["removed"]) },
		func() hcl.Diagnostics { return l.decodeChecks(byType["check"]) },
		func() hcl.Diagnostics { return l.decodeSandboxer(byType["sandboxer"]) },
	}
	for _, phase := range phases {
		if l.ev.ctx.Err() != nil {
			break
		}
		diags = append(diags, phase()...)
	}
	return diags
}

func newConfig(dir string) *Config {
	return &Config{
		Dir:       dir,
		Sources:   map[string][]byte{},
		Files:     map[string]*hcl.File{},
		Variables: map[string]*Variable{},
		Locals:    map[string]cty.Value{},
		Projects:  map[string]*Project{},
		Sandboxes: map[string]*Sandbox{},
	}
}

// ReadSources reads the configuration files directly in dir, keyed by base
// name, without decoding them (a saved plan compares them with its own).
func ReadSources(dir string) (map[string][]byte, hcl.Diagnostics) { return readDir(dir) }

// readDir reads the configuration files directly in dir, keyed by base name.
func readDir(dir string) (map[string][]byte, hcl.Diagnostics) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, hcl.Diagnostics{{
			Severity: hcl.DiagError,
			Summary:  "Failed to read configuration directory",
			Detail:   fmt.Sprintf("Cannot list %s: %s.", displayDir(dir), err),
		}}
	}
	var diags hcl.Diagnostics
	sources := map[string][]byte{}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), FileSuffix) || e.IsDir() {
			continue
		}
		src, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Failed to read configuration file",
				Detail:   fmt.Sprintf("Cannot read %s: %s.", e.Name(), err),
			})
			continue
		}
		sources[e.Name()] = src
	}
	return sources, diags
}

func displayDir(dir string) string {
	if dir == "" {
		return "the current directory"
	}
	return dir
}
