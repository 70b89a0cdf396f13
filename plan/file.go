package plan

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/sandboxer/sandboxer/config"
)

// FileFormat identifies saved plan files; bump it when the layout changes.
const FileFormat = "sandboxer-plan/2" // 2: creates and replaces name their images

// File is a saved plan: the changes plus what they were made against, so a
// later apply can refuse it when state or configuration have moved on.
type File struct {
	Format    string    `json:"format"`
	Version   string    `json:"sandboxer_version"`
	CreatedAt time.Time `json:"created_at"`
	// Lineage and Serial of the state the plan was made against.
	Lineage string `json:"lineage"`
	Serial  uint64 `json:"serial"`
	// ConfigDigest is a hash over Sources, for a quick "did config change".
	ConfigDigest string            `json:"config_digest"`
	Sources      map[string]string `json:"sources"`
	// Provider is the provider configuration apply must use.
	Provider *config.Provider `json:"provider"`
	// Kubernetes is the kubernetes provider configuration, kept when the
	// plan touches a sandbox there or the configuration declares it.
	Kubernetes *config.Provider `json:"kubernetes,omitempty"`
	Destroy    bool             `json:"destroy"`
	Changes    []*Change        `json:"changes"`
	// Checks are the check blocks' results when the plan was made.
	Checks []CheckResult `json:"checks,omitempty"`
}

// Runtimes lists the runtimes the plan's changes touch, sorted.
func (f *File) Runtimes() []string {
	seen := map[string]bool{}
	for _, c := range f.Changes {
		for _, sb := range []*Sandbox{c.Before, c.After} {
			if sb != nil {
				seen[sb.RuntimeName()] = true
			}
		}
	}
	out := make([]string, 0, len(seen))
	for rt := range seen {
		out = append(out, rt)
	}
	sort.Strings(out)
	return out
}

// NewFile wraps a plan with the configuration it came from.
func NewFile(p *Plan, cfg *config.Config, version string, now time.Time) *File {
	src := make(map[string]string, len(cfg.Sources))
	for name, b := range cfg.Sources {
		src[name] = string(b)
	}
	f := &File{
		Format: FileFormat, Version: version, CreatedAt: now.UTC(),
		Lineage: p.Lineage, Serial: p.Serial,
		ConfigDigest: SourcesDigest(cfg.Sources), Sources: src,
		Provider: cfg.Provider, Destroy: p.Destroy, Changes: p.Changes, Checks: p.Checks,
	}
	if k := cfg.Kubernetes; k != nil && (k.DeclRange.Filename != "" || slices.Contains(f.Runtimes(), config.RuntimeKubernetes)) {
		f.Kubernetes = k
	}
	return f
}

// Plan returns the plan the file holds.
func (f *File) Plan() *Plan {
	return &Plan{Lineage: f.Lineage, Serial: f.Serial, Destroy: f.Destroy, Changes: f.Changes, Checks: f.Checks}
}

// Encode renders the file as JSON.
func (f *File) Encode() ([]byte, error) {
	return json.MarshalIndent(f, "", "  ")
}

// DecodeFile parses a saved plan, refusing other formats.
func DecodeFile(b []byte) (*File, error) {
	var f File
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, fmt.Errorf("not a sandboxer plan file: %w", err)
	}
	if f.Format != FileFormat {
		return nil, fmt.Errorf("not a sandboxer plan file (format %q, want %q)", f.Format, FileFormat)
	}
	if f.Provider == nil {
		return nil, fmt.Errorf("plan file has no provider configuration")
	}
	return &f, nil
}

// SourcesDigest hashes configuration files by name and content.
func SourcesDigest(sources map[string][]byte) string {
	names := make([]string, 0, len(sources))
	for n := range sources {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		fmt.Fprintf(h, "%s\x00%d\x00", n, len(sources[n]))
		h.Write(sources[n])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ChangedSources lists, sorted, the configuration files that differ
// between a saved plan and current (the files in the directory now); a
// file gone since is named with " (removed)". None means the plan was made
// from the configuration as it is.
func ChangedSources(f *File, current map[string][]byte) []string {
	if SourcesDigest(current) == f.ConfigDigest {
		return nil
	}
	var changed []string
	for n, src := range current {
		if saved, ok := f.Sources[n]; !ok || saved != string(src) {
			changed = append(changed, n)
		}
	}
	for n := range f.Sources {
		if _, ok := current[n]; !ok {
			changed = append(changed, n+" (removed)")
		}
	}
	sort.Strings(changed)
	return changed
}
