package snapshot

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
)

// Take saves every service of rec as snapshot name and prepares the fast
// reset path inside the instance (Engine.Keep).
func Take(ctx context.Context, eng Engine, st Store, rec *state.Record, name string, now time.Time) (*Manifest, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	man := &Manifest{
		Name: name, CreatedAt: now.UTC(),
		Source:   Source{Address: rec.Address, Project: rec.Project, Generation: rec.Generation},
		Services: slices.Sorted(slices.Values(rec.Services)),
		Features: map[string][]string{},
	}
	for _, svc := range man.Services {
		man.Features[svc] = append([]string{}, rec.Features[svc]...)
	}
	err := st.Save(man, func(svc string, w io.Writer) error {
		return eng.Dump(ctx, rec, svc, w)
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot %s as %q: %w", rec.Address, name, err)
	}
	for _, f := range man.Files {
		d := Data{Key: f.SHA256, Path: st.Path(name) + string(os.PathSeparator) + f.Name, Size: f.Size}
		if err := eng.Keep(ctx, rec, f.Service, d); err != nil {
			return man, fmt.Errorf("snapshot %q is saved, but preparing its fast reset in %s failed (reset will do a full restore): %w", name, rec.Address, err)
		}
	}
	return man, nil
}

// MissingFeatureError is a snapshot that needs a service or feature the
// target instance lacks. Nothing was changed when it is returned.
type MissingFeatureError struct {
	Snapshot, Address string
	Service, Feature  string // Feature empty: the whole service is missing
	Have              []string
}

func (e *MissingFeatureError) Error() string {
	if e.Feature == "" {
		return fmt.Sprintf("snapshot %q holds %s data, but %s has no %s; nothing was changed",
			e.Snapshot, e.Service, e.Address, e.Service)
	}
	have := "none"
	if len(e.Have) > 0 {
		have = strings.Join(e.Have, ", ")
	}
	return fmt.Sprintf("snapshot %q needs %s feature %q, which %s does not have (it has: %s); nothing was changed. "+
		"Add %q to the sandbox's %s extensions and apply, or restore into a sandbox that has it",
		e.Snapshot, e.Service, e.Feature, e.Address, have, e.Feature, e.Service)
}

// CheckFeatures refuses a snapshot whose source had a service or feature
// rec lacks: its data may need it (a vector column needs vector).
func CheckFeatures(m *Manifest, rec *state.Record) error {
	for _, svc := range m.Services {
		if !slices.Contains(rec.Services, svc) {
			return &MissingFeatureError{Snapshot: m.Name, Address: rec.Address, Service: svc}
		}
		for _, f := range m.Features[svc] {
			// The data needs the feature, whatever API generation of it
			// either side asked for ("search" and "search@2" alike).
			name := config.FeatureName(f)
			if !slices.ContainsFunc(rec.Features[svc], func(h string) bool { return config.FeatureName(h) == name }) {
				return &MissingFeatureError{Snapshot: m.Name, Address: rec.Address, Service: svc, Feature: f, Have: rec.Features[svc]}
			}
		}
	}
	return nil
}

// Restore loads snapshot name into rec, replacing its data. Everything
// that can be checked is checked before the instance is touched: the
// features, and every file's checksum.
func Restore(ctx context.Context, eng Engine, st Store, rec *state.Record, name string) (*Manifest, error) {
	man, err := st.Load(name)
	if err != nil {
		return nil, err
	}
	if err := CheckFeatures(man, rec); err != nil {
		return nil, err
	}
	data := make([]Data, 0, len(man.Files))
	for _, svc := range man.Services {
		path, err := st.Verify(man, svc)
		if err != nil {
			return nil, err
		}
		f, _ := man.File(svc)
		data = append(data, Data{Key: f.SHA256, Path: path, Size: f.Size})
	}
	for i, svc := range man.Services {
		if err := eng.Load(ctx, rec, svc, data[i]); err != nil {
			return nil, fmt.Errorf("restore %q into %s: %s: %w", name, rec.Address, svc, err)
		}
	}
	return man, nil
}

// Latest returns the newest snapshot taken of addr, for `reset` without
// --snapshot.
func Latest(st Store, addr string) (*Manifest, error) {
	all, err := st.List()
	if err != nil {
		return nil, err
	}
	var best *Manifest
	for _, m := range all {
		if m.Source.Address == addr && (best == nil || m.CreatedAt.After(best.CreatedAt)) {
			best = m
		}
	}
	if best == nil {
		return nil, fmt.Errorf("no snapshot of %s to reset to: %w (take one with sandboxer snapshot %s --name NAME, or pass --snapshot)", addr, ErrNotFound, addr)
	}
	return best, nil
}

// Carry copies every service's data of from into to (its replacement),
// through dumps in a private temporary directory that is removed after.
// to must have every service and feature of from; formats names each
// service's file (Store.Formats).
func Carry(ctx context.Context, eng Engine, formats func(string) (FileFormat, bool), from, to *state.Record) error {
	for _, svc := range from.Services {
		if !slices.Contains(to.Services, svc) {
			return fmt.Errorf("carry data: the replacement has no %s", svc)
		}
		for _, f := range from.Features[svc] {
			if !slices.Contains(to.Features[svc], f) {
				return fmt.Errorf("carry data: the replacement lacks %s feature %q", svc, f)
			}
		}
	}
	dir, err := os.MkdirTemp("", "sandboxer-carry-")
	if err != nil {
		return fmt.Errorf("carry data: %w", err)
	}
	defer os.RemoveAll(dir)
	tmp := Store{Dir: dir, Formats: formats}
	man := &Manifest{Name: "carry", Services: slices.Sorted(slices.Values(from.Services))}
	if err := tmp.Save(man, func(svc string, w io.Writer) error { return eng.Dump(ctx, from, svc, w) }); err != nil {
		return fmt.Errorf("carry data: dump generation %d: %w", from.Generation, err)
	}
	for _, f := range man.Files {
		d := Data{Key: f.SHA256, Path: tmp.Path(man.Name) + string(os.PathSeparator) + f.Name, Size: f.Size}
		if err := eng.Load(ctx, to, f.Service, d); err != nil {
			return fmt.Errorf("carry data: load %s into generation %d: %w", f.Service, to.Generation, err)
		}
	}
	return nil
}
