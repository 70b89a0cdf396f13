package ondemand

import (
	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/internal/records"
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
	return &Result{Sandbox: records.Sandbox(rec, reused, prefix), Record: rec, Prefix: prefix}
}
