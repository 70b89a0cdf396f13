package sandboxer

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/records"
	"github.com/sandboxer/sandboxer/ondemand"
	"github.com/sandboxer/sandboxer/state"
)

// Forwarded endpoints (issue 30): a Kubernetes sandbox's pod IP does not
// answer from a host outside the cluster, so a process that hands out
// URLs for as long as it runs (serve, mcp, connect) asks the sandbox's
// runtime for local ports it forwards over the API server
// (apply.Forwarder; the runtime's endpoint setting decides whether it
// does). The forward runs in the runtime's program, which lives as long
// as this process: a URL it gives is valid only while the process runs,
// and the env says so (<PREFIX><SERVICE>_FORWARDED=1).

// ForwardedSuffix ends the variable that marks a service's URL as
// forwarded: <PREFIX><SERVICE>_FORWARDED=1.
const ForwardedSuffix = "FORWARDED"

// Forward is a sandbox as `sandboxer connect` hands it out: its
// credentials with the forwarded endpoints, and whether any is forwarded
// (false: the recorded endpoints answer from here, nothing runs).
type Forward struct {
	Sandbox
	// Forwarded lists the services whose host endpoints are local
	// ports forwarded while this process runs, sorted.
	Forwarded []string `json:"forwarded,omitempty"`
}

// Forward hands out the sandbox at address (in state: an applied sandbox
// or a requested instance) with local ports forwarded to its services
// when its runtime forwards them (a Kubernetes sandbox with endpoint =
// "port-forward", or "auto" where its pod IP does not answer). Asking
// again returns the same ports; a replacement at the address is followed.
// prefix names the variables ("" for SANDBOXER_).
func (s *Sandboxer) Forward(ctx context.Context, address, prefix string) (*Forward, error) {
	a, err := config.ParseAddress(address)
	if err != nil {
		return nil, &Error{Code: CodeInvalid, Message: err.Error(), Err: err}
	}
	rec, err := s.store.Get(ctx, a.String())
	if err != nil {
		return nil, classify(err)
	}
	if rec == nil || !ownedBy(ctx, rec) {
		return nil, &Error{Code: CodeNotFound, Message: fmt.Sprintf("%s is not provisioned (see sandboxer state list)", a)}
	}
	fwd, services, err := s.forwardRecord(ctx, rec)
	if err != nil {
		return nil, err
	}
	out := &Forward{Sandbox: records.Sandbox(fwd, true, prefix), Forwarded: services}
	markForwarded(out.Env, prefix, services)
	return out, nil
}

// forwardRecord is rec with the host endpoints of its forwarded services
// replaced by the local ports, and those services; rec itself when none
// is forwarded.
func (s *Sandboxer) forwardRecord(ctx context.Context, rec *state.Record) (*state.Record, []string, error) {
	eps, err := s.prov.Forward(ctx, rec)
	if err != nil {
		return nil, nil, classify(fmt.Errorf("forward %s: %w", rec.Address, err))
	}
	if len(eps) == 0 {
		return rec, nil, nil
	}
	cp := *rec
	cp.Credentials = maps.Clone(rec.Credentials)
	for svc, ep := range eps {
		c, ok := cp.Credentials[svc]
		if !ok {
			continue
		}
		c.Host, c.Port = ep.Host, ep.Port
		cp.Credentials[svc] = c
	}
	return &cp, slices.Sorted(maps.Keys(eps)), nil
}

// forwardResult rewrites a request's answer to the forwarded endpoints
// when the process hands out URLs for as long as it runs
// (Options.Forward).
func (s *Sandboxer) forwardResult(ctx context.Context, res *ondemand.Result) (*Sandbox, error) {
	out := res.Sandbox
	if !s.opts.Forward || res.Record == nil {
		return &out, nil
	}
	fwd, services, err := s.forwardRecord(ctx, res.Record)
	if err != nil || len(services) == 0 {
		return &out, err
	}
	out = records.Sandbox(fwd, res.Reused, res.Prefix)
	markForwarded(out.Env, res.Prefix, services)
	return &out, nil
}

// markForwarded adds <PREFIX><SERVICE>_FORWARDED=1 for each forwarded
// service.
func markForwarded(env map[string]string, prefix string, services []string) {
	if prefix == "" {
		prefix = state.DefaultEnvPrefix
	}
	for _, svc := range services {
		env[prefix+strings.ToUpper(svc)+"_"+ForwardedSuffix] = "1"
	}
}

// Forward routes to the record's runtime when it forwards
// (apply.Forwarder); a runtime without a forwarder hands out the
// recorded endpoints (nil).
func (l *lazyProvider) Forward(ctx context.Context, rec *state.Record) (map[string]apply.Endpoint, error) {
	p, err := l.on(ctx, rec.RuntimeOf())
	if err != nil {
		return nil, err
	}
	fw, ok := apply.As[apply.Forwarder](p)
	if !ok {
		return nil, nil
	}
	return fw.Forward(ctx, rec)
}
