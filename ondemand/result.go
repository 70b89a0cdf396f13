package ondemand

import (
	"time"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
)

// Result is what a request returns: SPEC §8's JSON object (the API's
// Sandbox, embedded so it marshals as exactly that shape). Env carries the
// credentials; it is the one field that ever does.
type Result struct {
	api.Sandbox

	// Record is the state record, for renderers (shell exports), and
	// Prefix the one Env's names start with ("" for SANDBOXER_).
	Record *state.Record `json:"-"`
	Prefix string        `json:"-"`
}

// NewResult describes rec, its variables named with prefix ("" for
// SANDBOXER_).
func NewResult(rec *state.Record, reused bool, prefix string) *Result {
	r := &Result{Sandbox: api.Sandbox{
		Address:             rec.Address,
		Reused:              reused,
		Generation:          rec.Generation,
		Services:            config.SortedUnique(rec.Services),
		Features:            config.FeatureSet(rec.Features).Only(rec.Services).Normalize(),
		AvailableExtensions: rec.AvailableExtensions,
		ExtensionVersions:   rec.Versions(),
		Env:                 rec.EnvMap(prefix),
	}, Record: rec, Prefix: prefix}
	for svc, c := range rec.Credentials {
		if c.CA != "" {
			if r.CA == nil {
				r.CA = map[string]string{}
			}
			r.CA[svc] = c.CA
		}
	}
	if r.AvailableExtensions == nil {
		r.AvailableExtensions = map[string][]string{}
	}
	if !rec.ExpiresAt.IsZero() {
		t := rec.ExpiresAt.UTC().Truncate(time.Second)
		r.ExpiresAt = &t
	}
	return r
}
