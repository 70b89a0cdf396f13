package docker

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
)

func TestCreateMissingExtension(t *testing.T) {
	t.Parallel()
	p, secrets := newTestProvider(t)
	lineage := newLineage(t, p)
	// Check (plan time) refuses this before any Create; Create must still
	// refuse it when called without one, and clean up.
	_, err := p.Create(context.Background(), apply.CreateRequest{
		Address: "sandbox.json", Lineage: lineage, Generation: 1,
		Features: config.FeatureSet{"redis": {"json", "search"}},
	})
	if err == nil {
		t.Fatal("Create succeeded with a module the image lacks")
	}
	t.Logf("error: %v", err)
	msg := err.Error()
	for _, want := range []string{`does not provide feature "json"`, testRedisImage(), "container log"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	secrets.assertClean(t, err)
	assertNothingLabelled(t, p, lineage)
}

func TestCreateReadinessTimeout(t *testing.T) {
	t.Parallel()
	p, secrets := newTestProvider(t)
	// initdb alone takes longer; from a template data directory a
	// quiet machine may start PostgreSQL within it, so none here.
	p.cfg.NoTemplate = true
	p.ReadyTimeout = 50 * time.Millisecond
	lineage := newLineage(t, p)
	start := time.Now()
	_, err := p.Create(context.Background(), apply.CreateRequest{
		Address: "sandbox.slow", Lineage: lineage, Generation: 1,
		Features: config.FeatureSet{"postgres": {}},
	})
	if err == nil {
		t.Fatal("Create succeeded within 50ms (scaled by load: at most 250ms)")
	}
	t.Logf("error: %v", err)
	// The timeout is scaled by the machine's load (up to 5×: still far
	// too short for initdb), and a timeout is transient.
	if !strings.Contains(err.Error(), "not ready after") || !errors.Is(err, apply.ErrTransient) {
		t.Errorf("error does not name the timeout, or is not apply.ErrTransient:\n%v", err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("timing out took %s", d)
	}
	secrets.assertClean(t, err)
	assertNothingLabelled(t, p, lineage)
}

// A container that dies during start fails Create at once, quoting its log.
func TestCreateContainerExits(t *testing.T) {
	t.Parallel()
	requireImages(t)
	cfg := testConfig()
	cfg.Images["redis"] = config.Image{Ref: testRedisImage(), Modules: map[string]string{"search": "/nonexistent/search.so"}}
	p, err := New(context.Background(), cfg, config.DefaultCatalog())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	secrets := &secretLog{}
	p.onSecrets = secrets.record
	lineage := newLineage(t, p)
	start := time.Now()
	_, err = p.Create(context.Background(), apply.CreateRequest{
		Address: "sandbox.crash", Lineage: lineage, Generation: 1,
		Features: config.FeatureSet{"redis": {"search"}},
	})
	if err == nil {
		t.Fatal("Create succeeded with a missing module file")
	}
	t.Logf("error after %s: %v", time.Since(start).Round(time.Millisecond), err)
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("exit detected after %s; should not wait for the deadline", d)
	}
	for _, want := range []string{"container exited", "/nonexistent/search.so", "container log"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	secrets.assertClean(t, err)
	assertNothingLabelled(t, p, lineage)
}

func TestCreateRejectsFeatureOutsideAllowlist(t *testing.T) {
	p, _ := newTestProvider(t)
	lineage := newLineage(t, p)
	_, err := p.Create(context.Background(), apply.CreateRequest{
		Address: "sandbox.evil", Lineage: lineage, Generation: 1,
		Features: config.FeatureSet{"postgres": {"plpython3u"}},
	})
	var notAllowed *config.FeatureNotAllowedError
	if !errors.As(err, &notAllowed) {
		t.Fatalf("got %v, want a FeatureNotAllowedError", err)
	}
	assertNothingLabelled(t, p, lineage)
}

func TestDockerUnreachable(t *testing.T) {
	cat := config.DefaultCatalog()
	check := func(t *testing.T, err error) {
		t.Helper()
		if err == nil {
			t.Fatal("New succeeded against a missing engine")
		}
		for _, want := range []string{"cannot reach the Docker engine", "unix:///nonexistent", "DOCKER_HOST"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error lacks %q: %v", want, err)
			}
		}
	}
	t.Run("provider host", func(t *testing.T) {
		cfg := testConfig()
		cfg.Host = "unix:///nonexistent"
		_, err := New(context.Background(), cfg, cat)
		check(t, err)
	})
	t.Run("DOCKER_HOST", func(t *testing.T) {
		t.Setenv("DOCKER_HOST", "unix:///nonexistent")
		_, err := New(context.Background(), testConfig(), cat)
		check(t, err)
	})
}

func TestCheck(t *testing.T) {
	t.Parallel()
	p, _ := newTestProvider(t)
	ctx := context.Background()
	if _, err := p.Check(ctx, uses("postgres", "redis")); err != nil {
		t.Fatalf("Check with local images: %v", err)
	}
	cfg := testConfig()
	cfg.Images["redis"] = config.Image{Ref: "sandboxer.invalid/no-such-image:0"}
	q, err := New(ctx, cfg, config.DefaultCatalog())
	if err != nil {
		t.Fatal(err)
	}
	defer q.Close()
	cctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	_, err = q.Check(cctx, uses("postgres", "redis"))
	if err == nil {
		t.Fatal("Check passed with a missing image")
	}
	t.Logf("error: %v", err)
	for _, want := range []string{`image "sandboxer.invalid/no-such-image:0" for service redis`, "could not be pulled", `image "redis" { ref`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
}

// Delete never removes what does not carry the instance's labels, even when
// state points at it.
func TestDeleteRefusesUnlabelled(t *testing.T) {
	t.Parallel()
	p, _ := newTestProvider(t)
	ctx := context.Background()
	resp, err := p.cli.ContainerCreate(ctx, &container.Config{Image: testRedisImage()}, nil, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.removeContainer(context.Background(), resp.ID) })
	rec := &state.Record{Address: "sandbox.foreign", Generation: 1,
		Resources: state.Resources{Containers: map[string]string{"redis": resp.ID}}}
	if err := p.Delete(ctx, rec); err == nil || !strings.Contains(err.Error(), "refusing") {
		t.Errorf("Delete of an unlabelled container: %v, want a refusal", err)
	}
	if _, err := p.cli.ContainerInspect(ctx, resp.ID); err != nil {
		t.Errorf("unlabelled container is gone: %v", err)
	}
}

// An interrupted Create (Ctrl-C cancels its context) still removes what it
// made, whether it is cut off while creating containers or while waiting.
func TestCreateCancelledCleansUp(t *testing.T) {
	t.Parallel()
	p, secrets := newTestProvider(t)
	for _, after := range []time.Duration{50 * time.Millisecond, 1500 * time.Millisecond} {
		t.Run(after.String(), func(t *testing.T) {
			lineage := newLineage(t, p)
			ctx, cancel := context.WithTimeout(context.Background(), after)
			defer cancel()
			_, err := p.Create(ctx, apply.CreateRequest{
				Address: "sandbox.interrupted", Lineage: lineage, Generation: 1,
				Features: config.FeatureSet{"postgres": {}, "redis": {}},
			})
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("got %v, want a context error", err)
			}
			t.Logf("error: %v", err)
			secrets.assertClean(t, err)
			assertNothingLabelled(t, p, lineage)
		})
	}
}

// Removals of one running container at once (a process killed while it
// released the container, then reap) all succeed: the engine refuses all
// but one ("removal … already in progress") and the others wait for it.
func TestConcurrentRemovalsOfOneContainer(t *testing.T) {
	t.Parallel()
	p, _ := newTestProvider(t)
	ctx := context.Background()
	// A server that takes its time to stop: SIGTERM is ignored, so a
	// forced removal kills it, and a shell trap keeps the removal busy.
	resp, err := p.cli.ContainerCreate(ctx, &container.Config{Image: testRedisImage(),
		Entrypoint: []string{"sh", "-c", "trap '' TERM; while :; do sleep 0.1; done"}}, nil, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cli.ContainerRemove(context.Background(), resp.ID, container.RemoveOptions{Force: true}) })
	if err := p.cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	const n = 6
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = p.removeContainer(ctx, resp.ID) }()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("removal %d: %v", i, err)
		}
	}
	if _, err := p.cli.ContainerInspect(ctx, resp.ID); !cerrdefs.IsNotFound(err) {
		t.Errorf("after the removals the container is still there (%v)", err)
	}
}
