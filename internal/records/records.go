// Package records is the one projection of a state record onto the API's
// shapes: api.Instance (no secrets: state JSON, GET /v1/sandboxes,
// extend) and api.Sandbox (with credentials: request). The library, the
// broker and the views all use it, so the shapes cannot drift apart.
//
// It never prints and does no I/O.
package records

import (
	"fmt"
	"time"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/services"
	"github.com/sandboxer/sandboxer/state"
)

// Generations maps, per service, each available extension that comes in
// API generations to the one the instance has, as the service reads it
// from the version its server reported (services.Generations); nil when
// none has one.
func Generations(r *state.Record) map[string]map[string]string {
	var out map[string]map[string]string
	for svc, vs := range r.Versions() {
		if g := services.Generations(svc, vs); g != nil {
			if out == nil {
				out = map[string]map[string]string{}
			}
			out[svc] = g
		}
	}
	return out
}

// Publish is a record's exposure; records made before it was kept were
// loopback without TLS.
func Publish(r *state.Record) config.Publish {
	p := config.Publish{Address: r.Reach.PublishAddress, AdvertiseHost: r.Reach.AdvertiseHost, TLS: r.Reach.TLS}
	if p.Address == "" {
		p.Address = config.DefaultPublishAddress
	}
	if p.AdvertiseHost == "" {
		p.AdvertiseHost = config.DefaultPublishAddress
	}
	return p
}

// Instance strips a record down to what may be shown.
func Instance(r *state.Record) api.Instance {
	in := api.Instance{Address: r.Address, Project: r.Project, Services: r.Services,
		Features: config.FeatureSet(r.Features).Only(r.Services), AvailableExtensions: r.AvailableExtensions,
		Endpoints: map[string]string{}, Generation: r.Generation, CreatedAt: r.CreatedAt.UTC(), OnDemand: r.OnDemand, Owner: r.Owner,
		Runtime: r.RuntimeOf()}
	if in.AvailableExtensions == nil {
		in.AvailableExtensions = map[string][]string{}
	}
	in.ExtensionVersions = r.Versions()
	in.ExtensionGenerations = Generations(r)
	for svc, c := range r.Credentials {
		in.Endpoints[svc] = fmt.Sprintf("%s:%d", c.Host, c.Port)
	}
	if !r.ExpiresAt.IsZero() {
		t := r.ExpiresAt.UTC()
		in.ExpiresAt = &t
	}
	in.Networks = r.Reach.Networks
	for svc, c := range r.Credentials {
		if c.NetworkHost == "" {
			continue
		}
		if in.NetworkEndpoints == nil {
			in.NetworkEndpoints = map[string]string{}
		}
		in.NetworkEndpoints[svc] = fmt.Sprintf("%s:%d", c.NetworkHost, c.NetworkPort)
	}
	if p := Publish(r); !p.IsDefault() {
		in.Exposure = p.String()
	}
	return in
}

// Sandbox describes a requested instance with its credentials, its
// variables named with prefix ("" for SANDBOXER_). Its expiry is whole
// seconds: it is what a caller schedules its release by.
func Sandbox(r *state.Record, reused bool, prefix string) api.Sandbox {
	s := api.Sandbox{
		Address:              r.Address,
		Reused:               reused,
		Generation:           r.Generation,
		Services:             config.SortedUnique(r.Services),
		Features:             config.FeatureSet(r.Features).Only(r.Services).Normalize(),
		AvailableExtensions:  r.AvailableExtensions,
		ExtensionVersions:    r.Versions(),
		ExtensionGenerations: Generations(r),
		Env:                  r.EnvMap(prefix),
	}
	for svc, c := range r.Credentials {
		if c.CA != "" {
			if s.CA == nil {
				s.CA = map[string]string{}
			}
			s.CA[svc] = c.CA
		}
	}
	if s.AvailableExtensions == nil {
		s.AvailableExtensions = map[string][]string{}
	}
	if !r.ExpiresAt.IsZero() {
		t := r.ExpiresAt.UTC().Truncate(time.Second)
		s.ExpiresAt = &t
	}
	return s
}
