package sandboxer

import (
	"context"
	"fmt"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/ondemand"
	"github.com/sandboxer/sandboxer/state"
)

// ForkResult is Fork's answer (api.ForkResult): the copies with their
// credentials, how the data was copied, how long the source was held.
type ForkResult = api.ForkResult

// ForkOptions are the per-call settings of Fork.
type ForkOptions struct {
	// Key names the source, as Request's.
	Key string
	// Count is how many copies to make (1 to MaxForkCount).
	Count int
	// ToKey is the copies' key prefix: they are PREFIX-1 … PREFIX-N
	// ("": the source's key + "-fork").
	ToKey string
	// TTL is the copies' ttl ("": the block's).
	TTL string
	// Prefix starts the names in each copy's Env, as Request's.
	Prefix string
}

// MaxForkCount bounds ForkOptions.Count.
const MaxForkCount = ondemand.MaxForkCount

// Fork makes Count new on-demand instances of the source's block whose
// data (every service's) is the source's at one instant: everything
// committed before the fork began is in every copy, nothing after. Each
// copy has its own credentials, TLS material, ttl, owner and key and is
// an ordinary instance afterwards. The source keeps serving; its
// writers are held only while its data is captured (HeldMS). An
// instance of another tenant is not found, as for any call.
func (s *Sandboxer) Fork(ctx context.Context, address string, o ForkOptions) (*ForkResult, error) {
	res, err := s.broker().Fork(ctx, ondemand.ForkRequest{Address: address, Key: o.Key, Count: o.Count,
		ToKey: o.ToKey, TTL: o.TTL, Prefix: o.Prefix})
	if err != nil {
		return nil, classify(err)
	}
	out := res.ForkResult
	return &out, nil
}

// Fork routes to the source's runtime; one that cannot fork says so.
func (l *lazyProvider) Fork(ctx context.Context, src *state.Record, reqs []apply.CreateRequest) (*apply.Forked, error) {
	p, err := l.on(ctx, src.RuntimeOf())
	if err != nil {
		return nil, err
	}
	f, ok := apply.As[apply.Forker](p)
	if !ok {
		return nil, &api.Error{Code: api.CodeUnavailable,
			Message: fmt.Sprintf("fork %s: the %s runtime cannot fork a running sandbox yet (docker and kubernetes can)", src.Address, src.RuntimeOf())}
	}
	return f.Fork(ctx, src, reqs)
}
