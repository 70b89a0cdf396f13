package ondemand

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/events"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/state"
)

// Forks (sandboxer fork, issue 32). Decisions where the issue is silent:
//   - The copies are instances of the source's block at keys
//     PREFIX-1 … PREFIX-N; PREFIX is --to-key, else the source's key
//     with "-fork". A key that is taken is a Conflict: nothing is made
//     (pick another prefix); the source's own key is refused likewise.
//   - A copy has the source's services, features, reach and seed digest
//     (it holds the same data), generation 1, its own credentials and
//     TLS material, the caller's tenant as owner, and the block's ttl
//     unless the call gives one: afterwards it is an ordinary instance.
//   - N is 1 to MaxForkCount; the provider then checks the host's free
//     disk and memory for N copies of the data (apply.ErrNoRoom) before
//     anything starts.
//   - The fork holds the source's instance lock (a release or a second
//     fork waits) and every copy's, so no request races a copy into
//     being.

// MaxForkCount bounds a fork's copies: each copy is a new instance with
// its own containers (up to the provider's memory limit each, 1 GiB by
// default), started at once; beyond 16 a 2- to 8-core host spends more
// time switching between starts than it saves, and the disk check
// decides below it.
const MaxForkCount = 16

// ForkRequest asks for copies of one running instance.
type ForkRequest struct {
	// Address and Key name the source, as in Request.
	Address string
	Key     string
	// Count is how many copies (1 to MaxForkCount).
	Count int
	// ToKey is the copies' key prefix ("": the source's key + "-fork").
	ToKey string
	// TTL is the copies' ttl ("": the block's).
	TTL string
	// Prefix starts the variable names of each copy's Env, as Request's.
	Prefix string
}

// ForkResult is a fork's outcome (api.ForkResult) and the copies'
// records.
type ForkResult struct {
	api.ForkResult
	Records []*state.Record
}

// Fork makes req.Count new instances whose data is the source's at one
// instant, through the provider's apply.Forker.
func (b *Broker) Fork(ctx context.Context, req ForkRequest) (*ForkResult, error) {
	start := time.Now()
	if req.Count < 1 || req.Count > MaxForkCount {
		return nil, refuse(Invalid, "--count %d: a fork makes 1 to %d copies", req.Count, MaxForkCount)
	}
	t, err := b.resolve(ctx, req.Address, req.Key, false)
	if err != nil {
		return nil, err
	}
	tmpl, ok := b.Config.Instance(t.addr.Block())
	if !ok {
		return nil, refuse(NotFound, "sandbox.%s has no usable template (its project is missing)", t.addr.Name)
	}
	ttl := tmpl.TTL
	if req.TTL != "" {
		if ttl, err = parseTTL(req.TTL); err != nil {
			return nil, err
		}
	}
	if err := admit(ctx, t.addr, ttl); err != nil {
		return nil, err
	}
	prefix := tmpl.EnvPrefix
	if req.Prefix != "" {
		if err := config.CheckEnvPrefix(req.Prefix); err != nil {
			return nil, refuse(Invalid, "%v", err)
		}
		prefix = req.Prefix
	}
	toKey := req.ToKey
	if toKey == "" {
		toKey = userKey(req.Address, req.Key) + "-fork"
	}
	targets := make([]target, req.Count)
	for i := range targets {
		a, err := parseTarget(ctx, "sandbox."+t.addr.Name, fmt.Sprintf("%s-%d", toKey, i+1))
		if err != nil {
			return nil, refuse(Invalid, "--to-key %q: %v", toKey, err)
		}
		if a == t.addr {
			return nil, refuse(Invalid, "--to-key %q: a copy cannot take the source's own key", toKey)
		}
		targets[i] = target{addr: a, block: t.block, owner: t.owner, start: start}
	}

	srcAddr := t.String()
	unlock, err := b.lock(ctx, srcAddr, "fork")
	if err != nil {
		return nil, err
	}
	defer unlock()
	src, err := b.Store.Get(ctx, srcAddr)
	if err != nil {
		return nil, err
	}
	if src == nil || !owns(ctx, src) {
		return nil, refuse(NotFound, "%s is not provisioned; request it first", srcAddr)
	}
	if plan.Expired(src, b.now()) {
		return nil, refuse(Conflict, "%s has expired (it is reaped soon); request it again, then fork", srcAddr)
	}
	if perr := b.Provider.Probe(ctx, src); perr != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("probe %s: %w", srcAddr, ctx.Err())
		}
		return nil, refuse(Conflict, "%s is not running (%v); request it again, then fork", srcAddr, perr)
	}
	for _, ct := range targets {
		unlock, err := b.lock(ctx, ct.String(), "fork")
		if err != nil {
			return nil, err
		}
		defer unlock()
		rec, err := b.Store.Get(ctx, ct.String())
		if err != nil {
			return nil, err
		}
		if rec != nil {
			return nil, refuse(Conflict, "%s exists already; fork with another --to-key, or release it first", ct)
		}
		release, err := b.reserve(ctx, ct.String())
		if err != nil {
			return nil, err
		}
		defer release()
	}
	fk, ok := apply.As[apply.Forker](b.Provider)
	if !ok {
		return nil, refuse(Unavailable, "the %s runtime cannot fork a running sandbox yet", src.RuntimeOf())
	}
	lineage, err := b.Store.EnsureLineage(ctx)
	if err != nil {
		return nil, err
	}
	database := ""
	for _, c := range src.Credentials {
		if c.Database != "" {
			database = c.Database
		}
	}
	pub := config.Publish{Address: src.Reach.PublishAddress, AdvertiseHost: src.Reach.AdvertiseHost, TLS: src.Reach.TLS}
	if pub.Address == "" {
		pub = config.DefaultPublish()
	}
	reqs := make([]apply.CreateRequest, len(targets))
	for i, ct := range targets {
		reqs[i] = apply.CreateRequest{Address: ct.String(), Lineage: lineage, Generation: 1,
			Features: config.FeatureSet(src.Features).Names(), Networks: slices.Clone(src.Reach.Networks),
			Publish: pub, Database: database, Runtime: runtimeOf(src)}
	}
	forked, err := fk.Fork(ctx, src, reqs)
	if err != nil {
		b.emitFor(events.Failed, t, src.Generation, "fork: "+err.Error())
		switch {
		case errors.Is(err, apply.ErrNoRoom), errors.Is(err, apply.ErrNotForkable):
			return nil, &Error{Kind: Unavailable, Msg: err.Error(), Err: err}
		case errors.Is(err, apply.ErrNotFound):
			return nil, &Error{Kind: Conflict, Msg: fmt.Sprintf("%s is not running: %v; request it again, then fork", srcAddr, err), Err: err}
		}
		return nil, err
	}
	now := b.now()
	out := &ForkResult{ForkResult: api.ForkResult{Source: srcAddr, Methods: forked.Methods, Bytes: forked.Bytes,
		HeldMS: forked.Held.Milliseconds()}}
	for i, ct := range targets {
		made := forked.Created[i]
		rec := &state.Record{Address: ct.String(), Project: src.Project, OnDemand: true, Owner: ct.owner,
			Services: slices.Clone(src.Services), Features: maps.Clone(src.Features),
			AvailableExtensions: made.AvailableExtensions, ExtensionVersions: made.ExtensionVersions,
			Credentials: made.Credentials, Resources: made.Resources, Reach: src.Reach,
			CreatedAt: now, Generation: 1, SeedDigest: src.SeedDigest}
		if rec.Resources.Runtime == "" && src.Resources.Runtime != "" {
			rec.Resources.Runtime = src.Resources.Runtime
		}
		if ttl > 0 {
			rec.ExpiresAt = now.Add(ttl)
		}
		out.Records = append(out.Records, rec)
	}
	// Record every copy, even when ctx was cancelled meanwhile: they
	// exist. A copy that cannot be recorded takes every copy down.
	for i, rec := range out.Records {
		if err := b.Store.Put(context.WithoutCancel(ctx), rec); err != nil {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
			defer cancel()
			for j, r := range out.Records {
				if j < i {
					_ = b.Store.Delete(cctx, r.Address)
				}
				if derr := b.Provider.Delete(cctx, r); derr != nil {
					err = errors.Join(err, fmt.Errorf("remove copy %s (sandboxer reap finds it by its labels): %w", r.Address, derr))
				}
			}
			return nil, fmt.Errorf("record fork copy %s: %w; every copy was removed again", rec.Address, err)
		}
	}
	for i, rec := range out.Records {
		b.emitFor(events.Provisioned, targets[i], rec.Generation, "fork of "+srcAddr)
		out.Sandboxes = append(out.Sandboxes, NewResult(rec, false, prefix).Sandbox)
	}
	out.ElapsedMS = time.Since(start).Milliseconds()
	return out, nil
}

// userKey is the key the caller gave for the source (before the
// tenant's name is folded in).
func userKey(address, key string) string {
	if key != "" {
		return key
	}
	if a, err := config.ParseAddress(address); err == nil {
		return a.Key
	}
	return ""
}

// runtimeOf is the record's runtime as a CreateRequest names it ("" for
// docker).
func runtimeOf(rec *state.Record) string {
	if rec.RuntimeOf() == state.RuntimeDocker {
		return ""
	}
	return rec.RuntimeOf()
}
