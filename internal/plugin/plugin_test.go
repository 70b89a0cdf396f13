package plugin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/rpc"
	"net/rpc/jsonrpc"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/plugin"
	"github.com/sandboxer/sandboxer/providers/fake"
	"github.com/sandboxer/sandboxer/providers/providertest"
	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

// The test binary is also the program under test: run with serveEnv set
// it serves testProvider on its standard streams, as sandboxer-kubernetes
// serves the kubernetes runtime.
const serveEnv = "SANDBOXER_PLUGIN_TEST_SERVE"

func TestMain(m *testing.M) {
	if os.Getenv(serveEnv) == "1" {
		signal.Ignore(syscall.SIGPIPE) // as kubeplugin.Main
		if err := plugin.Serve(os.Stdin, os.Stdout, openTestProvider); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func openTestProvider(ctx context.Context, s plugin.Settings) (apply.Provider, error) {
	if s.Provider != nil && s.Provider.Namespace == "unreachable" {
		return nil, fmt.Errorf("kubernetes provider: %w (at %s)", apply.ErrEngine, s.Provider.Namespace)
	}
	return &testProvider{Provider: fake.New(config.NewCatalog(s.Catalog)), settings: s}, nil
}

// testProvider is the fake runtime plus the data capabilities, and a
// create that waits for its context.
type testProvider struct {
	*fake.Provider
	settings plugin.Settings
	mu       sync.Mutex
	ln       net.Listener // Forward's
	loaded   []string
}

func (p *testProvider) Create(ctx context.Context, req apply.CreateRequest) (*apply.Created, error) {
	if req.Address == "sandbox.waits" {
		<-ctx.Done()
		return nil, fmt.Errorf("create %s: %w", req.Address, ctx.Err())
	}
	if req.Address == "sandbox.settings" { // says what it was opened with
		return &apply.Created{AvailableExtensions: map[string][]string{
			"ready_timeout": {p.settings.ReadyTimeout.String()},
			"ca_dir":        {p.settings.CADir},
			"catalog":       {strings.Join(config.NewCatalog(p.settings.Catalog).Allowed("redis"), ",")},
			"empty":         {},
		}}, nil
	}
	return p.Provider.Create(ctx, req)
}

func (p *testProvider) Dump(ctx context.Context, rec *state.Record, service string, w io.Writer) error {
	_, err := fmt.Fprintf(w, "%s of %s\n%s", service, rec.Address, strings.Repeat("x", 1<<20))
	return err
}

func (p *testProvider) Load(ctx context.Context, rec *state.Record, service string, d snapshot.Data) error {
	b, err := os.ReadFile(d.Path)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.loaded = append(p.loaded, string(b))
	return nil
}

func (p *testProvider) Keep(ctx context.Context, rec *state.Record, service string, d snapshot.Data) error {
	return fmt.Errorf("keep %s: %w", d.Key, apply.ErrNotFound)
}

func (p *testProvider) RunSQL(ctx context.Context, rec *state.Record, files []snapshot.SQLFile) error {
	return fmt.Errorf("run %d files on %s: nothing to run them on", len(files), rec.Address)
}

// Forward forwards sandbox.fwd's services to ports 40000 and up (none
// for another address: its recorded endpoints answer), and opens a
// listener on the first, so the test can see the program listens
// itself.
func (p *testProvider) Forward(ctx context.Context, rec *state.Record) (map[string]apply.Endpoint, error) {
	if rec.Address != "sandbox.fwd" {
		return nil, nil
	}
	if rec.Resources.Pod == "" {
		return nil, fmt.Errorf("forward %s: no pod: %w", rec.Address, apply.ErrNotFound)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln == nil {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		p.ln = ln
	}
	return map[string]apply.Endpoint{"postgres": {Host: "127.0.0.1", Port: p.ln.Addr().(*net.TCPAddr).Port}}, nil
}

// Fork makes one copy per request with the fake runtime's Create, and
// refuses a source named sandbox.mysql (not forkable) and one named
// sandbox.full (no room), as a runtime does before anything starts.
func (p *testProvider) Fork(ctx context.Context, src *state.Record, reqs []apply.CreateRequest) (*apply.Forked, error) {
	switch src.Address {
	case "sandbox.mysql":
		return nil, fmt.Errorf("fork %s: service mysql %w: take a snapshot and request with restore instead", src.Address, apply.ErrNotForkable)
	case "sandbox.full":
		return nil, fmt.Errorf("fork %s: not enough disk: %w", src.Address, apply.ErrNoRoom)
	}
	out := &apply.Forked{Methods: map[string]string{"postgres": "copy", "redis": "rdb"}, Bytes: 1 << 20, Held: 42 * time.Millisecond}
	for _, req := range reqs {
		made, err := p.Provider.Create(ctx, req)
		if err != nil {
			return nil, err
		}
		out.Created = append(out.Created, made)
	}
	return out, nil
}

// start runs the test binary as the program.
func start(t *testing.T, s plugin.Settings) *plugin.Client {
	t.Helper()
	t.Setenv(serveEnv, "1")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c, err := plugin.Start(context.Background(), exe, s)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return c
}

func settings() plugin.Settings {
	return plugin.Settings{Catalog: config.DefaultCatalog().Specs()}
}

// The conformance suite every runtime passes, through another process.
func TestConformanceThroughAProcess(t *testing.T) {
	c := start(t, settings())
	providertest.Run(t, func(t *testing.T) providertest.Subject { return providertest.Subject{Provider: c} })
}

func TestSettingsArriveAsSent(t *testing.T) {
	s := settings()
	s.ReadyTimeout, s.CADir = 42*time.Second, "/some/ca"
	c := start(t, s)
	got, err := c.Create(context.Background(), apply.CreateRequest{Address: "sandbox.settings"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"ready_timeout": {"42s"}, "ca_dir": {"/some/ca"}, "catalog": {"bloom,json,search"}, "empty": {}}
	for k, v := range want {
		g, ok := got.AvailableExtensions[k]
		if !ok || strings.Join(g, ",") != strings.Join(v, ",") || (g == nil) != (v == nil) {
			t.Errorf("%s = %#v, want %#v", k, g, v)
		}
	}
}

// Fork crosses (protocol 3): the copies in order with their credentials,
// the methods, bytes and hold, and the refusals' sentinels, which the
// broker turns into "unavailable".
func TestForkCrosses(t *testing.T) {
	c := start(t, settings())
	ctx := context.Background()
	feats := config.FeatureSet{"postgres": {}, "redis": {}}
	reqs := []apply.CreateRequest{{Address: `sandbox.a["f-1"]`, Lineage: "l", Generation: 1, Features: feats},
		{Address: `sandbox.a["f-2"]`, Lineage: "l", Generation: 1, Features: feats}}
	got, err := c.Fork(ctx, &state.Record{Address: `sandbox.a["base"]`}, reqs)
	if err != nil {
		t.Fatalf("Fork: %v", err)
	}
	if len(got.Created) != 2 || got.Methods["redis"] != "rdb" || got.Bytes != 1<<20 || got.Held != 42*time.Millisecond {
		t.Fatalf("Fork = %+v", got)
	}
	if got.Created[0].Credentials["postgres"].Password == got.Created[1].Credentials["postgres"].Password {
		t.Error("the copies share a password")
	}
	for addr, want := range map[string]error{"sandbox.mysql": apply.ErrNotForkable, "sandbox.full": apply.ErrNoRoom} {
		_, err := c.Fork(ctx, &state.Record{Address: addr}, reqs)
		if !errors.Is(err, want) {
			t.Errorf("Fork of %s: %v, want %v", addr, err, want)
		}
	}
}

// Forward crosses with its endpoints, its nil (nothing forwarded) and its
// errors' sentinels; the listener is the program's own.
func TestForwardCrosses(t *testing.T) {
	c := start(t, settings())
	ctx := context.Background()
	rec := &state.Record{Address: "sandbox.fwd", Resources: state.Resources{Pod: "p"}}
	eps, err := c.Forward(ctx, rec)
	if err != nil || len(eps) != 1 || eps["postgres"].Host != "127.0.0.1" || eps["postgres"].Port == 0 {
		t.Fatalf("Forward: %v, %v", eps, err)
	}
	conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", fmt.Sprint(eps["postgres"].Port)))
	if err != nil {
		t.Fatalf("the program's listener: %v", err)
	}
	conn.Close()
	again, err := c.Forward(ctx, rec)
	if err != nil || again["postgres"] != eps["postgres"] {
		t.Errorf("Forward again: %v, %v; want the same port", again, err)
	}
	if eps, err := c.Forward(ctx, &state.Record{Address: "sandbox.other"}); err != nil || eps != nil {
		t.Errorf("Forward of a sandbox that needs none: %v, %v; want nil, nil", eps, err)
	}
	_, err = c.Forward(ctx, &state.Record{Address: "sandbox.fwd"})
	if !errors.Is(err, apply.ErrNotFound) {
		t.Errorf("Forward without a pod: %v, want ErrNotFound", err)
	}
}

func TestErrorsKeepTextAndSentinels(t *testing.T) {
	c := start(t, settings())
	ctx := context.Background()
	err := c.Keep(ctx, &state.Record{Address: "sandbox.a"}, "postgres", snapshot.Data{Key: "k1"})
	if err == nil || err.Error() != "keep k1: not found" || !errors.Is(err, apply.ErrNotFound) || errors.Is(err, apply.ErrEngine) {
		t.Errorf("Keep: %v (ErrNotFound %v); want \"keep k1: not found\", ErrNotFound only", err, errors.Is(err, apply.ErrNotFound))
	}
	err = c.RunSQL(ctx, &state.Record{Address: "sandbox.a"}, []snapshot.SQLFile{{Name: "a.sql", Path: "/a.sql"}})
	if err == nil || err.Error() != "run 1 files on sandbox.a: nothing to run them on" || errors.Is(err, apply.ErrNotFound) {
		t.Errorf("RunSQL: %v", err)
	}
	// A probe of an instance the runtime never made: the fake's not-found.
	err = c.Probe(ctx, &state.Record{Address: "sandbox.none", Services: []string{"redis"}, Generation: 1})
	if !errors.Is(err, apply.ErrNotFound) {
		t.Errorf("Probe of an unknown instance: %v, want ErrNotFound", err)
	}
}

func TestOpenErrorIsTheProviders(t *testing.T) {
	t.Setenv(serveEnv, "1")
	exe, _ := os.Executable()
	s := settings()
	s.Provider = &config.Provider{Runtime: config.RuntimeKubernetes, Namespace: "unreachable"}
	c, err := plugin.Start(context.Background(), exe, s)
	if err == nil {
		c.Close()
		t.Fatal("Start succeeded; want the provider's error")
	}
	if err.Error() != "kubernetes provider: cannot reach the Docker engine (at unreachable)" || !errors.Is(err, apply.ErrEngine) {
		t.Errorf("Start: %v", err)
	}
}

// A cancelled context reaches the provider's: its create returns, and its
// own error comes back.
func TestCancelReachesTheProvider(t *testing.T) {
	c := start(t, settings())
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	_, err := c.Create(ctx, apply.CreateRequest{Address: "sandbox.waits"})
	if err == nil || err.Error() != "create sandbox.waits: context canceled" || !errors.Is(err, context.Canceled) {
		t.Errorf("Create: %v; want the provider's \"create sandbox.waits: context canceled\"", err)
	}
	// Already cancelled when sent: the provider is still called, and its
	// error is the answer.
	_, err = c.Create(ctx, apply.CreateRequest{Address: "sandbox.waits"})
	if err == nil || err.Error() != "create sandbox.waits: context canceled" {
		t.Errorf("Create with a cancelled context: %v; want the provider's own error", err)
	}
	ctx, cancel = context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err = c.Create(ctx, apply.CreateRequest{Address: "sandbox.waits"})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Create past its deadline: %v; want DeadlineExceeded", err)
	}
}

// Calls run side by side: one waiting create does not hold up others.
func TestCallsRunConcurrently(t *testing.T) {
	c := start(t, settings())
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() {
		_, err := c.Create(ctx, apply.CreateRequest{Address: "sandbox.waits"})
		waited <- err
	}()
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Go(func() {
			addr := fmt.Sprintf("sandbox.c%d", i)
			req := apply.CreateRequest{Address: addr, Generation: 1, Features: config.FeatureSet{"redis": {}}}
			cr, err := c.Create(context.Background(), req)
			if err != nil {
				errs <- err
				return
			}
			rec := &state.Record{Address: addr, Services: []string{"redis"}, Credentials: cr.Credentials, Resources: cr.Resources, Generation: 1}
			if err := c.Probe(context.Background(), rec); err != nil {
				errs <- fmt.Errorf("probe %s: %w", addr, err)
			}
			if err := c.Delete(context.Background(), rec); err != nil {
				errs <- fmt.Errorf("delete %s: %w", addr, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	select {
	case err := <-waited:
		t.Fatalf("the waiting create returned before it was cancelled: %v", err)
	default:
	}
	cancel()
	if err := <-waited; !errors.Is(err, context.Canceled) {
		t.Errorf("the waiting create: %v", err)
	}
}

func TestDataCrossesAsFiles(t *testing.T) {
	c := start(t, settings())
	ctx := context.Background()
	rec := &state.Record{Address: "sandbox.d"}
	var buf bytes.Buffer
	if err := c.Dump(ctx, rec, "redis", &buf); err != nil {
		t.Fatal(err)
	}
	if want := "redis of sandbox.d\n" + strings.Repeat("x", 1<<20); buf.String() != want {
		t.Errorf("Dump wrote %d bytes starting %q; want %d", buf.Len(), buf.String()[:min(buf.Len(), 30)], len(want))
	}
	path := filepath.Join(t.TempDir(), "dump")
	if err := os.WriteFile(path, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := c.Load(ctx, rec, "redis", snapshot.Data{Key: "k", Path: path, Size: 4}); err != nil {
		t.Errorf("Load: %v", err)
	}
}

// A program from another build is refused before anything is done.
func TestOtherProtocolRefused(t *testing.T) {
	srv := rpc.NewServer()
	if err := srv.RegisterName("Provider", oldProgram{}); err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	go srv.ServeCodec(jsonrpc.NewServerCodec(a))
	_, err := plugin.Connect(context.Background(), b, b, settings())
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("speaks plugin protocol 0 and this sandboxer %d: install both from one build", plugin.ProtocolVersion)) {
		t.Errorf("Connect to a protocol-0 program: %v", err)
	}
}

type oldProgram struct{}

func (oldProgram) Open(a struct{ Protocol int }, r *struct{ Protocol int }) error {
	r.Protocol = 0
	return nil
}

func TestCloseEndsTheProgram(t *testing.T) {
	t.Setenv(serveEnv, "1")
	exe, _ := os.Executable()
	c, err := plugin.Start(context.Background(), exe, settings())
	if err != nil {
		t.Fatal(err)
	}
	pid := c.Pid()
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err == nil {
		t.Errorf("process %d still exists after Close", pid)
	}
	if err := c.Probe(context.Background(), &state.Record{Address: "sandbox.a"}); err == nil {
		t.Error("Probe after Close succeeded")
	}
}

// A program that dies is seen as ended, so serve can start it again.
func TestKilledProgramIsExited(t *testing.T) {
	c := start(t, settings())
	if c.Exited() {
		t.Fatal("Exited before anything happened")
	}
	proc, err := os.FindProcess(c.Pid())
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !c.Exited() && time.Now().Before(deadline) {
		err = c.Probe(context.Background(), &state.Record{Address: "sandbox.a"})
		time.Sleep(20 * time.Millisecond)
	}
	if !c.Exited() {
		t.Fatalf("calls after the program was killed do not report it ended (last: %v)", err)
	}
	if err == nil || !strings.Contains(err.Error(), "has ended") {
		t.Errorf("a call to a killed program: %v", err)
	}
}

func TestFindLooksBesideThenOnPath(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("PATH", dir)
	_, err := plugin.Find("sandboxer-test-program")
	if err == nil || !strings.Contains(err.Error(), "its program sandboxer-test-program is not beside ") || !strings.Contains(err.Error(), " or on PATH; make build puts it beside sandboxer in bin/") {
		t.Errorf("Find of a missing program: %v", err)
	}
	prog := filepath.Join(dir, "sandboxer-test-program")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := plugin.Find("sandboxer-test-program"); err != nil || got != prog {
		t.Errorf("Find = %q, %v; want %s from PATH", got, err, prog)
	}
}
