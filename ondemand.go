package sandboxer

import (
	"context"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/internal/views"
	"github.com/sandboxer/sandboxer/ondemand"
	"github.com/sandboxer/sandboxer/state"
)

// Sandbox is a requested instance with its credentials (SPEC §8's
// request object); Instance is one without them.
type (
	Sandbox  = api.Sandbox
	Instance = api.Instance
)

// RequestOptions are the per-call settings of Request.
type RequestOptions struct {
	// Key names the instance; required unless the address has one
	// (sandbox.NAME["KEY"]).
	Key string
	// Extensions are extra features for this call, service → features.
	Extensions map[string][]string
	// TTL overrides the block's ttl, e.g. "2h" (at most 30d).
	TTL string
	// Profile names a profile of the block's project.
	Profile string
	// Prefix starts the names in Env ("" keeps the block's env_prefix,
	// else SANDBOXER_).
	Prefix string
}

// Request ensures the on-demand instance exists and covers what is asked,
// by the cache rule: a live cached instance that covers it is returned
// (Reused), a dead one is re-provisioned, a lacking one replaced with
// rotated credentials.
func (s *Sandboxer) Request(ctx context.Context, address string, o RequestOptions) (*Sandbox, error) {
	res, err := s.Broker().Request(ctx, ondemand.Request{Address: address, Key: o.Key, Extensions: o.Extensions, TTL: o.TTL, Profile: o.Profile, Prefix: o.Prefix})
	if err != nil {
		return nil, classify(err)
	}
	out := res.Sandbox
	return &out, nil
}

// Release tears the instance down. released is false when there was
// nothing to release (a no-op, not an error).
func (s *Sandboxer) Release(ctx context.Context, address, key string) (released bool, err error) {
	released, err = s.Broker().Release(ctx, address, key)
	return released, classify(err)
}

// Extend sets the instance's expiry to now + ttl.
func (s *Sandboxer) Extend(ctx context.Context, address, key, ttl string) (*Instance, error) {
	rec, err := s.Broker().Extend(ctx, address, key, ttl)
	if err != nil {
		return nil, classify(err)
	}
	in := views.NewJSONInstance(rec)
	return &in, nil
}

// List returns the on-demand instances in state, without credentials. A
// record that cannot be read does not hide the others: they are returned
// together with an error naming every damaged record and how to restore
// or remove it.
func (s *Sandboxer) List(ctx context.Context) ([]Instance, error) {
	recs, damaged, err := s.Broker().List(ctx)
	if err != nil {
		return nil, classify(err)
	}
	out := make([]Instance, 0, len(recs))
	for _, r := range recs {
		out = append(out, views.NewJSONInstance(r))
	}
	if len(damaged) > 0 {
		return out, classify((&state.Snapshot{Damaged: damaged}).DamagedError())
	}
	return out, nil
}
