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
	Env                 map[string]string   `json:"env"`
	// CA holds, per service that speaks TLS, the PEM of the instance's CA:
	// env's SANDBOXER_<SVC>_CA names a file on the machine that ran
	// sandboxer, which an API client elsewhere cannot read.
	CA map[string]string `json:"ca,omitempty"`
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
		Env:                 views.EnvMap(rec),
		Record:              rec,
	}
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
