package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/rpc"
	"net/rpc/jsonrpc"
	"os"
	"sync"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/snapshot"
)

// OpenFunc makes the provider a program serves from the caller's settings
// (connecting to its engine, as the in-process constructor would).
type OpenFunc func(ctx context.Context, s Settings) (apply.Provider, error)

// Serve answers one client on r and w until r ends, then closes the
// provider it opened. The program's main calls it with os.Stdin and
// os.Stdout.
func Serve(r io.Reader, w io.Writer, open OpenFunc) error {
	s := &server{open: open, calls: map[uint64]context.CancelFunc{}, early: map[uint64]bool{}}
	srv := rpc.NewServer()
	if err := srv.RegisterName(service, &methods{s}); err != nil {
		return fmt.Errorf("plugin: %w", err)
	}
	srv.ServeCodec(jsonrpc.NewServerCodec(pipe{r, w}))
	s.cancelAll()
	return s.close()
}

type server struct {
	open OpenFunc

	mu       sync.Mutex
	provider apply.Provider // nil until Open
	calls    map[uint64]context.CancelFunc
	early    map[uint64]bool // cancels that came before their call
}

// begin makes the context of one call, cancelled by Cancel or at its
// deadline.
func (s *server) begin(c Call) (context.Context, func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ctx, cancel := context.WithCancel(context.Background())
	if !c.Deadline.IsZero() {
		var stop context.CancelFunc
		ctx, stop = context.WithDeadline(ctx, c.Deadline)
		inner := cancel
		cancel = func() { stop(); inner() }
	}
	s.calls[c.ID] = cancel
	if c.Cancelled || s.early[c.ID] {
		delete(s.early, c.ID)
		cancel()
	}
	return ctx, func() {
		s.mu.Lock()
		delete(s.calls, c.ID)
		s.mu.Unlock()
		cancel()
	}
}

func (s *server) opened() apply.Provider {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.provider
}

func (s *server) cancel(id uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c := s.calls[id]; c != nil {
		c()
		return
	}
	// The cancel overtook its call (each request runs in a goroutine of
	// its own), or the call has ended; begin consumes the mark.
	s.early[id] = true
}

func (s *server) cancelAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.calls {
		c()
	}
}

func (s *server) close() error {
	s.mu.Lock()
	p := s.provider
	s.mu.Unlock()
	if c, ok := p.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// methods are the RPC methods (net/rpc's shape: args, *reply, error);
// the provider's own error travels in the reply.
type methods struct{ s *server }

func (m *methods) Open(a OpenArgs, r *OpenReply) error {
	r.Protocol = ProtocolVersion
	if a.Protocol != ProtocolVersion {
		return nil // the client sees the mismatch and says so
	}
	if m.s.opened() != nil {
		r.Err = toWire(errors.New("plugin: the provider is already open"))
		return nil
	}
	ctx, done := m.s.begin(a.Call)
	defer done()
	p, err := m.s.open(ctx, a.Settings)
	if err != nil {
		r.Err = toWire(err)
		return nil
	}
	m.s.mu.Lock()
	m.s.provider = p
	m.s.mu.Unlock()
	return nil
}

// Cancel cancels the context of the call with this id, if it is running.
func (m *methods) Cancel(id uint64, _ *struct{}) error {
	m.s.cancel(id)
	return nil
}

// run runs f with the call's context and the provider's Capability T.
func run[T any](s *server, c Call, what string, f func(ctx context.Context, p T) error) *WireError {
	provider := s.opened()
	if provider == nil {
		return toWire(errors.New("plugin: the provider is not open"))
	}
	ctx, done := s.begin(c)
	defer done()
	p, ok := apply.As[T](provider)
	if !ok {
		return toWire(fmt.Errorf("this provider cannot %s", what))
	}
	return toWire(f(ctx, p))
}

func (m *methods) Check(a CheckArgs, r *CheckReply) error {
	r.Err = run(m.s, a.Call, "check images", func(ctx context.Context, p apply.Provider) error {
		caps, err := p.Check(ctx, a.Images)
		r.NilCaps = caps == nil
		for use, c := range caps {
			r.Caps = append(r.Caps, Capability{Use: use, Caps: c})
		}
		return err
	})
	return nil
}

func (m *methods) Create(a CreateArgs, r *CreateReply) error {
	r.Err = run(m.s, a.Call, "create", func(ctx context.Context, p apply.Provider) (err error) {
		r.Created, err = p.Create(ctx, a.Req)
		return err
	})
	return nil
}

// Ping answers for the runtime: the provider's own ping when it has one
// (apply.Pinger), else the program's answer is the check.
func (m *methods) Ping(a Call, r *ErrReply) error {
	r.Err = run(m.s, a, "ping", func(ctx context.Context, p apply.Provider) error {
		if pg, ok := apply.As[apply.Pinger](p); ok {
			return pg.Ping(ctx)
		}
		return ctx.Err()
	})
	return nil
}

func (m *methods) Probe(a RecordArgs, r *ErrReply) error {
	r.Err = run(m.s, a.Call, "probe", func(ctx context.Context, p apply.Provider) error {
		return p.Probe(ctx, a.Record)
	})
	return nil
}

func (m *methods) Forward(a RecordArgs, r *ForwardReply) error {
	r.Err = run(m.s, a.Call, "forward ports", func(ctx context.Context, p apply.Forwarder) (err error) {
		r.Endpoints, err = p.Forward(ctx, a.Record)
		return err
	})
	return nil
}

func (m *methods) Fork(a ForkArgs, r *ForkReply) error {
	r.Err = run(m.s, a.Call, "fork a running sandbox", func(ctx context.Context, p apply.Forker) (err error) {
		r.Forked, err = p.Fork(ctx, a.Source, a.Reqs)
		return err
	})
	return nil
}

func (m *methods) Delete(a RecordArgs, r *ErrReply) error {
	r.Err = run(m.s, a.Call, "delete", func(ctx context.Context, p apply.Provider) error {
		return p.Delete(ctx, a.Record)
	})
	return nil
}

func (m *methods) ListManaged(a ListArgs, r *ListReply) error {
	r.Err = run(m.s, a.Call, "list labelled resources", func(ctx context.Context, p apply.Inventory) (err error) {
		r.Resources, err = p.ListManaged(ctx, a.Lineage)
		return err
	})
	return nil
}

func (m *methods) DeleteManaged(a DeleteManagedArgs, r *ErrReply) error {
	r.Err = run(m.s, a.Call, "remove labelled resources", func(ctx context.Context, p apply.Inventory) error {
		return p.DeleteManaged(ctx, a.Items)
	})
	return nil
}

func (m *methods) SweepShared(a ListArgs, r *ErrReply) error {
	r.Err = run(m.s, a.Call, "remove a lineage's shared resources", func(ctx context.Context, p apply.SharedSweeper) error {
		return p.SweepShared(ctx, a.Lineage)
	})
	return nil
}

func (m *methods) Dump(a DumpArgs, r *ErrReply) error {
	r.Err = run(m.s, a.Call, "dump data", func(ctx context.Context, p snapshot.Engine) error {
		f, err := os.OpenFile(a.Path, os.O_WRONLY|os.O_TRUNC, 0)
		if err != nil {
			return fmt.Errorf("plugin: the dump file: %w", err)
		}
		err = p.Dump(ctx, a.Record, a.Service, f)
		return errors.Join(err, f.Close())
	})
	return nil
}

func (m *methods) Load(a DataArgs, r *ErrReply) error {
	r.Err = run(m.s, a.Call, "load data", func(ctx context.Context, p snapshot.Engine) error {
		return p.Load(ctx, a.Record, a.Service, a.Data)
	})
	return nil
}

func (m *methods) Keep(a DataArgs, r *ErrReply) error {
	r.Err = run(m.s, a.Call, "keep data", func(ctx context.Context, p snapshot.Engine) error {
		return p.Keep(ctx, a.Record, a.Service, a.Data)
	})
	return nil
}

func (m *methods) RunSQL(a SQLArgs, r *ErrReply) error {
	r.Err = run(m.s, a.Call, "run SQL", func(ctx context.Context, p snapshot.SQLRunner) error {
		return p.RunSQL(ctx, a.Record, a.Files)
	})
	return nil
}

// pipe is the two streams as the one connection net/rpc wants.
type pipe struct {
	io.Reader
	io.Writer
}

func (p pipe) Close() error {
	var errs []error
	if c, ok := p.Reader.(io.Closer); ok {
		errs = append(errs, c.Close())
	}
	if c, ok := p.Writer.(io.Closer); ok {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
