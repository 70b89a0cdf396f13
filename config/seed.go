package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// Seed is the data a sandbox is loaded with when it is provisioned: a
// snapshot (see package snapshot) and/or SQL files run, in order, as the
// handed-out PostgreSQL role after it.
type Seed struct {
	// Snapshot names a snapshot under the state directory's snapshots/.
	Snapshot string `json:"snapshot,omitempty"`
	// SQL are the files, relative to the configuration directory, with the
	// sha256 of each as read when the configuration was decoded.
	SQL []SeedFile `json:"sql,omitempty"`
}

// SeedFile is one SQL seed file.
type SeedFile struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
}

// Digest identifies the seed: the snapshot's name and every file's path
// and content, in order. A record keeps the digest of the seed it was
// loaded with; a different digest plans a seed_changed replace. A snapshot
// counts by name: one re-taken under the same name re-seeds only with
// --replace.
func (s *Seed) Digest() string {
	if s == nil || (s.Snapshot == "" && len(s.SQL) == 0) {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "snapshot %q\n", s.Snapshot)
	for _, f := range s.SQL {
		fmt.Fprintf(h, "sql %q %s\n", f.Path, f.SHA256)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// dataSettings are the data arguments of a sandbox or project block.
type dataSettings struct {
	Seed      *Seed
	CarryData bool
}

var seedSnapshotPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)

// decodeDataSettings reads seed_sql, seed_snapshot and (sandbox only)
// carry_data. SQL files are read now, relative to the configuration
// directory, so a missing file is a diagnostic on its list element and
// the digest reflects their content at plan time.
func (l *loader) decodeDataSettings(content *hcl.BodyContent, sc scope, owner string) (dataSettings, hcl.Diagnostics) {
	var ds dataSettings
	var diags hcl.Diagnostics
	seed := &Seed{}
	if attr, ok := content.Attributes["seed_snapshot"]; ok {
		v, more := l.ev.eval(attr.Expr, sc)
		diags = append(diags, more...)
		sv, ok, more := typed(v, attr.Expr, cty.String, "seed_snapshot")
		diags = append(diags, more...)
		if ok && !sv.IsNull() {
			if !seedSnapshotPattern.MatchString(sv.AsString()) {
				diags = append(diags, errorDiag("Invalid snapshot name",
					fmt.Sprintf("%s: %q is not a snapshot name (1-63 of A-Z a-z 0-9 _ . -, starting with a letter or digit).", owner, sv.AsString()),
					attr.Expr.Range()))
			} else {
				seed.Snapshot = sv.AsString()
			}
		}
	}
	if attr, ok := content.Attributes["seed_sql"]; ok {
		v, more := l.ev.eval(attr.Expr, sc)
		diags = append(diags, more...)
		items, _, more := listItems(v, attr.Expr, "seed_sql")
		diags = append(diags, more...)
		for _, it := range items {
			f, err := l.seedFile(it.Value)
			if err != nil {
				diags = append(diags, errorDiag("Unreadable seed file", fmt.Sprintf("%s: %s.", owner, err), it.Range))
				continue
			}
			seed.SQL = append(seed.SQL, f)
		}
	}
	if seed.Snapshot != "" || len(seed.SQL) > 0 {
		ds.Seed = seed
	}
	if attr, ok := content.Attributes["carry_data"]; ok {
		v, more := l.ev.eval(attr.Expr, sc)
		diags = append(diags, more...)
		bv, ok, more := typed(v, attr.Expr, cty.Bool, "carry_data")
		diags = append(diags, more...)
		ds.CarryData = ok && !bv.IsNull() && bv.True()
	}
	return ds, diags
}

// seedFile reads one seed file under the configuration directory.
func (l *loader) seedFile(p string) (SeedFile, error) {
	clean := filepath.ToSlash(filepath.Clean(p))
	if filepath.IsAbs(p) || clean == ".." || strings.HasPrefix(clean, "../") {
		return SeedFile{}, fmt.Errorf("seed file %q must be a path inside the configuration directory", p)
	}
	b, err := os.ReadFile(filepath.Join(l.cfg.Dir, clean))
	if err != nil {
		return SeedFile{}, fmt.Errorf("seed file %q: %w", p, unwrapPathError(err))
	}
	sum := sha256.Sum256(b)
	return SeedFile{Path: clean, SHA256: hex.EncodeToString(sum[:])}, nil
}

func unwrapPathError(err error) error {
	if pe, ok := err.(*os.PathError); ok {
		return pe.Err
	}
	return err
}

// mergeSeed is the instance's seed: the sandbox's, else the project's.
func mergeSeed(sandbox, project *Seed) *Seed {
	if sandbox != nil {
		return sandbox
	}
	if project == nil {
		return nil
	}
	cp := *project
	cp.SQL = slices.Clone(project.SQL)
	return &cp
}
