package plugin

import (
	"context"
	"errors"
	"time"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

// ProtocolVersion changes whenever a message below changes shape (2:
// Forward; 3: Fork, and the sentinels apply.ErrNoRoom and
// apply.ErrNotForkable).
const ProtocolVersion = 3

// service is the name the server registers its methods under.
const service = "Provider"

// Settings is what the program needs to make its provider: the caller's
// provider block and catalog, and the knobs the composition root sets on
// an in-process provider.
type Settings struct {
	Provider     *config.Provider
	Catalog      []config.ServiceSpec
	CacheDir     string // "": the image facts are kept in memory only
	ReadyTimeout time.Duration
	CADir        string
}

// Call identifies one request, so the client can cancel it, and carries
// its context's deadline.
type Call struct {
	ID       uint64
	Deadline time.Time // zero: none
	// Cancelled: the context had ended before the call was sent; the
	// provider still gets the call, with its context ended, as in process.
	Cancelled bool
}

// WireError is an error as it crosses: its text, and the sentinels found
// in it by errors.Is.
type WireError struct {
	Message string
	Is      []string
}

// sentinels are the errors a caller tests a provider's errors for.
var sentinels = []struct {
	name string
	err  error
}{
	{"not_found", apply.ErrNotFound},
	{"engine", apply.ErrEngine},
	{"canceled", context.Canceled},
	{"deadline", context.DeadlineExceeded},
	{"no_room", apply.ErrNoRoom},
	{"not_forkable", apply.ErrNotForkable},
}

func toWire(err error) *WireError {
	if err == nil {
		return nil
	}
	w := &WireError{Message: err.Error()}
	for _, s := range sentinels {
		if errors.Is(err, s.err) {
			w.Is = append(w.Is, s.name)
		}
	}
	return w
}

func (w *WireError) err() error {
	if w == nil {
		return nil
	}
	e := &remoteError{msg: w.Message}
	for _, name := range w.Is {
		for _, s := range sentinels {
			if s.name == name {
				e.is = append(e.is, s.err)
			}
		}
	}
	return e
}

// remoteError is the provider's error on the caller's side.
type remoteError struct {
	msg string
	is  []error
}

func (e *remoteError) Error() string   { return e.msg }
func (e *remoteError) Unwrap() []error { return e.is }

// The requests and replies, one pair per method; exported because net/rpc
// serves only methods whose messages are. Every reply carries the
// provider's error in Err: net/rpc's own error is only for the transport.

type OpenArgs struct {
	Call     Call
	Protocol int
	Settings Settings
}

type OpenReply struct {
	Protocol int
	Err      *WireError
}

type ErrReply struct{ Err *WireError }

type CheckArgs struct {
	Call   Call
	Images []plan.ImageUse
}

// Capability is one entry of plan.Capabilities, whose keys are structs
// (JSON object keys are strings).
type Capability struct {
	Use  plan.ImageUse
	Caps plan.ImageCapabilities
}

type CheckReply struct {
	Caps    []Capability
	NilCaps bool // the provider returned a nil map
	Err     *WireError
}

type CreateArgs struct {
	Call Call
	Req  apply.CreateRequest
}

type CreateReply struct {
	Created *apply.Created
	Err     *WireError
}

type RecordArgs struct {
	Call   Call
	Record *state.Record
}

type ListArgs struct {
	Call    Call
	Lineage string
}

type ListReply struct {
	Resources []apply.Resource
	Err       *WireError
}

type DeleteManagedArgs struct {
	Call  Call
	Items []apply.Resource
}

// DumpArgs names the file the program writes the dump to: both ends are
// on one machine, and a file keeps a large dump out of the message stream.
type DumpArgs struct {
	Call    Call
	Record  *state.Record
	Service string
	Path    string
}

type DataArgs struct {
	Call    Call
	Record  *state.Record
	Service string
	Data    snapshot.Data
}

type SQLArgs struct {
	Call   Call
	Record *state.Record
	Files  []snapshot.SQLFile
}

type ForwardReply struct {
	Endpoints map[string]apply.Endpoint // nil: hand out the recorded ones
	Err       *WireError
}

// ForkArgs are apply.Forker's: the source's record and one create
// request per copy.
type ForkArgs struct {
	Call   Call
	Source *state.Record
	Reqs   []apply.CreateRequest
}

type ForkReply struct {
	Forked *apply.Forked
	Err    *WireError
}
