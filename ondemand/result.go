package ondemand

import (
	"time"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
	"github.com/sandboxer/sandboxer/views"
)

// Result is what a request returns: SPEC §8's JSON object. Env carries the
// credentials; it is the one field that ever does.
type Result struct {
	Address             string              `json:"address"`
	Reused              bool                `json:"reused"`
	Generation          int                 `json:"generation"`
	Services            []string            `json:"services"`
	Features            config.FeatureSet   `json:"features"`
	AvailableExtensions map[string][]string `json:"available_extensions"`
	// ExtensionVersions: service → available extension → version (a
	// sibling of available_extensions, which keeps SPEC's shape).
	ExtensionVersions map[string]map[string]string `json:"extension_versions"`
	Env               map[string]string            `json:"env"`
	// ExpiresAt is null for an instance without a ttl.
	ExpiresAt *time.Time `json:"expires_at"`

	// Record is the state record, for renderers (shell exports).
	Record *state.Record `json:"-"`
}

// NewResult describes rec.
func NewResult(rec *state.Record, reused bool) *Result {
	r := &Result{
		Address:             rec.Address,
		Reused:              reused,
		Generation:          rec.Generation,
		Services:            config.SortedUnique(rec.Services),
		Features:            config.FeatureSet(rec.Features).Only(rec.Services).Normalize(),
		AvailableExtensions: rec.AvailableExtensions,
		ExtensionVersions:   views.ExtensionVersions(rec),
		Env:                 views.EnvMap(rec),
		Record:              rec,
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
