package views

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/internal/records"
	"github.com/sandboxer/sandboxer/state"
)

// SortedRecords returns the snapshot's records in address order.
func SortedRecords(snap *state.Snapshot) []*state.Record {
	out := make([]*state.Record, 0, len(snap.Records))
	for _, r := range snap.Records {
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Address < out[j].Address })
	return out
}

// RecordText renders one instance for people; credentials show as
// (sensitive).
func RecordText(w io.Writer, r *state.Record) {
	fmt.Fprintf(w, "# %s\n", r.Address)
	if r.Owner != "" {
		fmt.Fprintf(w, "  owner       = %q\n", r.Owner)
	}
	fmt.Fprintf(w, "  project     = %q\n", r.Project)
	fmt.Fprintf(w, "  generation  = %d\n", r.Generation)
	fmt.Fprintf(w, "  created_at  = %s\n", r.CreatedAt.UTC().Format(time.RFC3339))
	if r.ExpiresAt.IsZero() {
		fmt.Fprintln(w, "  expires_at  = never")
	} else {
		fmt.Fprintf(w, "  expires_at  = %s\n", r.ExpiresAt.UTC().Format(time.RFC3339))
	}
	reachText(w, r)
	for _, svc := range r.Services {
		fmt.Fprintf(w, "  %s {\n", svc)
		fmt.Fprintf(w, "    features             = %s\n", listText(r.Features[svc]))
		if avail, ok := r.AvailableExtensions[svc]; ok {
			fmt.Fprintf(w, "    available_extensions = %s\n", listText(avail))
		}
		if vs := r.ExtensionVersions[svc]; len(vs) > 0 {
			fmt.Fprintf(w, "    extension_versions   = %s\n", versionsText(vs))
		}
		// JSON's extension_generations, in the width of the block.
		if gs := records.Generations(r)[svc]; len(gs) > 0 {
			fmt.Fprintf(w, "    api_generations      = %s\n", versionsText(gs))
		}
		if c, ok := r.Credentials[svc]; ok {
			fmt.Fprintf(w, "    endpoint             = %q\n", fmt.Sprintf("%s:%d", c.Host, c.Port))
			serviceReachText(w, c)
			fmt.Fprintf(w, "    user                 = %q\n", c.User)
			fmt.Fprintln(w, "    password             = (sensitive)")
			if c.Database != "" {
				fmt.Fprintf(w, "    database             = %q\n", c.Database)
			}
		}
		if id, ok := r.Resources.Containers[svc]; ok {
			fmt.Fprintf(w, "    container            = %q\n", shortID(id))
		}
		fmt.Fprintln(w, "  }")
	}
}

// StateText renders every instance in state.
func StateText(w io.Writer, snap *state.Snapshot) {
	recs := SortedRecords(snap)
	if len(recs) == 0 {
		fmt.Fprintln(w, "The state is empty: no sandboxes are provisioned.")
		return
	}
	for i, r := range recs {
		if i > 0 {
			fmt.Fprintln(w)
		}
		RecordText(w, r)
	}
}

// JSONState is `show --json` without a plan file: instances without
// credentials.
type JSONState struct {
	FormatVersion    string         `json:"format_version"`
	SandboxerVersion string         `json:"sandboxer_version"`
	Lineage          string         `json:"lineage"`
	Serial           uint64         `json:"serial"`
	Sandboxes        []JSONInstance `json:"sandboxes"`
}

// JSONInstance is one instance without secrets: the API's shape, shared
// with GET /v1/sandboxes.
type JSONInstance = api.Instance

// NewJSONInstance strips a record down to what may be shown.
func NewJSONInstance(r *state.Record) JSONInstance { return records.Instance(r) }

// StateJSON writes the state document.
func StateJSON(w io.Writer, snap *state.Snapshot, version string) error {
	doc := JSONState{FormatVersion: "1.0", SandboxerVersion: version, Lineage: snap.Lineage,
		Serial: snap.Serial, Sandboxes: []JSONInstance{}}
	for _, r := range SortedRecords(snap) {
		doc.Sandboxes = append(doc.Sandboxes, NewJSONInstance(r))
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(doc)
}

func shortID(id string) string {
	id = strings.TrimPrefix(id, "sha256:")
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

// versionsText renders name → version as {name = "version", …}, sorted.
func versionsText(vs map[string]string) string {
	names := make([]string, 0, len(vs))
	for n := range vs {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%s = %q", n, vs[n])
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
