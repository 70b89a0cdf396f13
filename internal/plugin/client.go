package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/rpc"
	"net/rpc/jsonrpc"
	"os"
	"os/exec"
	"sync/atomic"
	"time"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

// Client is a provider served by a program of its own (Serve); it has
// that provider's methods and capabilities.
type Client struct {
	program string // its name, for errors
	rpc     *rpc.Client
	cmd     *exec.Cmd      // nil for Connect
	stdin   io.WriteCloser // the program's standard input (nil for Connect)
	next    atomic.Uint64
	closed  atomic.Bool
	// exited is set when a call finds the connection gone: the program
	// ended (it crashed, or was killed), and nothing more can be sent.
	exited atomic.Bool
}

var (
	_ apply.Provider     = (*Client)(nil)
	_ apply.Inventory    = (*Client)(nil)
	_ apply.Forwarder    = (*Client)(nil)
	_ apply.Forker       = (*Client)(nil)
	_ snapshot.Engine    = (*Client)(nil)
	_ snapshot.SQLRunner = (*Client)(nil)
	_ io.Closer          = (*Client)(nil)
)

// Start runs the program at path and opens its provider with s. The
// program outlives ctx (it ends with Close); ctx bounds the opening.
func Start(ctx context.Context, path string, s Settings) (*Client, error) {
	cmd := exec.Command(path)
	cmd.Stderr = os.Stderr // a program that fails to start says why there
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	c := &Client{program: path, rpc: jsonrpc.NewClient(pipe{out, in}), cmd: cmd, stdin: in}
	if err := c.open(ctx, s); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Connect opens the provider of a server already answering on r and w
// (tests serve one in process).
func Connect(ctx context.Context, r io.Reader, w io.Writer, s Settings) (*Client, error) {
	c := &Client{program: "the plugin", rpc: jsonrpc.NewClient(pipe{r, w})}
	if err := c.open(ctx, s); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Client) open(ctx context.Context, s Settings) error {
	var r OpenReply
	if err := c.call(ctx, "Open", func(cl Call) any { return OpenArgs{Call: cl, Protocol: ProtocolVersion, Settings: s} }, &r); err != nil {
		return err
	}
	if r.Protocol != ProtocolVersion {
		return fmt.Errorf("%s speaks plugin protocol %d and this sandboxer %d: install both from one build", c.program, r.Protocol, ProtocolVersion)
	}
	return r.Err.err()
}

// call sends one request and waits for its reply. When ctx ends first the
// server is asked to cancel the call, and its reply (the provider's own
// error, as in process) is still awaited.
func (c *Client) call(ctx context.Context, method string, args func(Call) any, reply any) error {
	cl := Call{ID: c.next.Add(1)}
	if d, ok := ctx.Deadline(); ok {
		cl.Deadline = d
	}
	// A deadline is the program's to enforce (it has the same clock), so
	// the provider sees DeadlineExceeded as it would in process; only a
	// cancellation is sent.
	cl.Cancelled = errors.Is(ctx.Err(), context.Canceled)
	pending := c.rpc.Go(service+"."+method, args(cl), reply, make(chan *rpc.Call, 1))
	select {
	case <-pending.Done:
	case <-ctx.Done():
		if errors.Is(ctx.Err(), context.Canceled) {
			c.rpc.Go(service+".Cancel", cl.ID, &struct{}{}, make(chan *rpc.Call, 1))
		}
		<-pending.Done
	}
	if pending.Error != nil {
		if errors.Is(pending.Error, rpc.ErrShutdown) || errors.Is(pending.Error, io.ErrUnexpectedEOF) || errors.Is(pending.Error, io.EOF) {
			c.exited.Store(true)
			return fmt.Errorf("%s has ended: %w", c.program, pending.Error)
		}
		return fmt.Errorf("%s: %w", c.program, pending.Error)
	}
	return nil
}

// Exited reports whether a call found the program gone; a long-running
// caller (serve) then starts it again rather than failing every call.
func (c *Client) Exited() bool { return c.exited.Load() }

// Close ends the program: its standard input closes, it answers what it
// was asked, closes its provider and exits, and its output ends. (Closing
// the output first would kill it with SIGPIPE mid-answer.) A program
// that does not end within 10 s is killed.
func (c *Client) Close() error {
	if c.closed.Swap(true) {
		return nil
	}
	if c.cmd == nil {
		return ignoreShutdown(c.rpc.Close())
	}
	err := c.stdin.Close()
	done := make(chan error, 1)
	go func() { done <- c.cmd.Wait() }()
	select {
	case werr := <-done:
		if werr != nil && !c.exited.Load() { // an earlier call reported the end
			err = errors.Join(err, fmt.Errorf("%s: %w", c.program, werr))
		}
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-done
		err = errors.Join(err, fmt.Errorf("%s did not end when asked; killed", c.program))
	}
	return errors.Join(err, ignoreShutdown(c.rpc.Close()))
}

// ignoreShutdown drops the error of closing a connection already closed
// (by the program's end).
func ignoreShutdown(err error) error {
	if errors.Is(err, rpc.ErrShutdown) || errors.Is(err, os.ErrClosed) {
		return nil
	}
	return err
}

func (c *Client) Check(ctx context.Context, images []plan.ImageUse) (plan.Capabilities, error) {
	var r CheckReply
	if err := c.call(ctx, "Check", func(cl Call) any { return CheckArgs{Call: cl, Images: images} }, &r); err != nil {
		return nil, err
	}
	var caps plan.Capabilities
	if !r.NilCaps {
		caps = make(plan.Capabilities, len(r.Caps))
		for _, e := range r.Caps {
			caps[e.Use] = e.Caps
		}
	}
	return caps, r.Err.err()
}

func (c *Client) Create(ctx context.Context, req apply.CreateRequest) (*apply.Created, error) {
	var r CreateReply
	if err := c.call(ctx, "Create", func(cl Call) any { return CreateArgs{Call: cl, Req: req} }, &r); err != nil {
		return nil, err
	}
	return r.Created, r.Err.err()
}

// Ping asks the program whether its runtime answers (apply.Pinger).
func (c *Client) Ping(ctx context.Context) error {
	return c.errCall(ctx, "Ping", func(cl Call) any { return cl })
}

func (c *Client) Probe(ctx context.Context, rec *state.Record) error {
	return c.errCall(ctx, "Probe", func(cl Call) any { return RecordArgs{Call: cl, Record: rec} })
}

func (c *Client) Delete(ctx context.Context, rec *state.Record) error {
	return c.errCall(ctx, "Delete", func(cl Call) any { return RecordArgs{Call: cl, Record: rec} })
}

func (c *Client) ListManaged(ctx context.Context, lineage string) ([]apply.Resource, error) {
	var r ListReply
	if err := c.call(ctx, "ListManaged", func(cl Call) any { return ListArgs{Call: cl, Lineage: lineage} }, &r); err != nil {
		return nil, err
	}
	return r.Resources, r.Err.err()
}

func (c *Client) DeleteManaged(ctx context.Context, items []apply.Resource) error {
	return c.errCall(ctx, "DeleteManaged", func(cl Call) any { return DeleteManagedArgs{Call: cl, Items: items} })
}

func (c *Client) SweepShared(ctx context.Context, lineage string) error {
	return c.errCall(ctx, "SweepShared", func(cl Call) any { return ListArgs{Call: cl, Lineage: lineage} })
}

// Dump has the program write the dump to a private temporary file, then
// copies it to w.
func (c *Client) Dump(ctx context.Context, rec *state.Record, service string, w io.Writer) error {
	f, err := os.CreateTemp("", "sandboxer-dump-*")
	if err != nil {
		return fmt.Errorf("dump %s: %w", service, err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	if err := c.errCall(ctx, "Dump", func(cl Call) any {
		return DumpArgs{Call: cl, Record: rec, Service: service, Path: f.Name()}
	}); err != nil {
		return err
	}
	if _, err := io.Copy(w, f); err != nil {
		return fmt.Errorf("dump %s: %w", service, err)
	}
	return nil
}

func (c *Client) Load(ctx context.Context, rec *state.Record, service string, d snapshot.Data) error {
	return c.errCall(ctx, "Load", func(cl Call) any { return DataArgs{Call: cl, Record: rec, Service: service, Data: d} })
}

func (c *Client) Keep(ctx context.Context, rec *state.Record, service string, d snapshot.Data) error {
	return c.errCall(ctx, "Keep", func(cl Call) any { return DataArgs{Call: cl, Record: rec, Service: service, Data: d} })
}

func (c *Client) RunSQL(ctx context.Context, rec *state.Record, files []snapshot.SQLFile) error {
	return c.errCall(ctx, "RunSQL", func(cl Call) any { return SQLArgs{Call: cl, Record: rec, Files: files} })
}

// Forward asks the program for local ports forwarded to rec's services
// (apply.Forwarder); the program listens on them itself, so the forward
// lives as long as the program, which lives as long as this process.
func (c *Client) Forward(ctx context.Context, rec *state.Record) (map[string]apply.Endpoint, error) {
	var r ForwardReply
	if err := c.call(ctx, "Forward", func(cl Call) any { return RecordArgs{Call: cl, Record: rec} }, &r); err != nil {
		return nil, err
	}
	return r.Endpoints, r.Err.err()
}

// Fork has the program fork src into one copy per request
// (apply.Forker); a program whose provider cannot fork says so.
func (c *Client) Fork(ctx context.Context, src *state.Record, reqs []apply.CreateRequest) (*apply.Forked, error) {
	var r ForkReply
	if err := c.call(ctx, "Fork", func(cl Call) any { return ForkArgs{Call: cl, Source: src, Reqs: reqs} }, &r); err != nil {
		return nil, err
	}
	if err := r.Err.err(); err != nil {
		return nil, err
	}
	return r.Forked, nil
}

func (c *Client) errCall(ctx context.Context, method string, args func(Call) any) error {
	var r ErrReply
	if err := c.call(ctx, method, args, &r); err != nil {
		return err
	}
	return r.Err.err()
}

// Pid is the program's process id (0 for Connect).
func (c *Client) Pid() int {
	if c.cmd == nil || c.cmd.Process == nil {
		return 0
	}
	return c.cmd.Process.Pid
}
