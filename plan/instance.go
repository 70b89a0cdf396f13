package plan

import (
	"time"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
)

// Decide applies the cache rule (SPEC §3) to one instance outside a whole
// plan: the on-demand path (`sandboxer request`, the HTTP API) decides one
// keyed instance at a time with the very rule `plan` uses, so the rule is
// written once. rec is the cached record (nil when none); obs may say it is
// dead. Like Build it is pure.
func Decide(in *config.Instance, rec *state.Record, obs Observed, opts Options) *Change {
	return decide(in, rec, obs, opts)
}

// Expired reports whether a record's TTL has run out at now.
func Expired(rec *state.Record, now time.Time) bool {
	return expired(rec, now)
}
