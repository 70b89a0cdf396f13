// Package enginetest starts containers of the local service images for
// the service packages' tests, the way a runtime would (docker run with
// environment, mounts and arguments), through the docker CLI, and gives
// them a Runner (exec and copy) like a runtime's.
//
// What this package must never do: be imported by non-test code, or
// remove anything it did not create (each container has a name of its
// own, removed when its test ends).
package enginetest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/internal/testenv"
)

// Image returns ref when the engine answers and has the image; otherwise
// it skips tb (fails it with SANDBOXER_REQUIRE_DOCKER=1), naming the
// build command.
func Image(tb testing.TB, ref, build string) string {
	tb.Helper()
	testenv.RequireDocker(tb)
	if err := exec.Command("docker", "image", "inspect", ref).Run(); err != nil {
		if testenv.Required() {
			tb.Fatalf("image %s is missing (build it with %s), and %s=1 requires it", ref, build, testenv.RequireEnv)
		}
		tb.Skipf("image %s is missing (build it with %s)", ref, build)
	}
	return ref
}

// Container is one container a test started.
type Container struct {
	Name string
	tb   testing.TB
}

// Spec is what a runtime would give docker run.
type Spec struct {
	Image  string
	Env    []string          // NAME=value
	Mounts map[string]string // host path → container path (read-only)
	Tmpfs  []string          // container path[:options]
	Port   int               // published on 127.0.0.1, a free host port
	Args   []string
}

// Start runs spec detached under a name of the test's own and removes the
// container (and its anonymous volumes) when tb ends.
func Start(ctx context.Context, tb testing.TB, spec Spec) *Container {
	tb.Helper()
	var b [5]byte
	_, _ = rand.Read(b[:])
	c := &Container{Name: "sbx-svctest-" + hex.EncodeToString(b[:]), tb: tb}
	args := []string{"run", "-d", "--name", c.Name, "--label", "sandboxer.test=" + tb.Name(),
		"--security-opt", "no-new-privileges"}
	for _, e := range spec.Env {
		args = append(args, "-e", e)
	}
	for host, ctr := range spec.Mounts {
		args = append(args, "-v", host+":"+ctr+":ro")
	}
	for _, t := range spec.Tmpfs {
		args = append(args, "--tmpfs", t)
	}
	if spec.Port != 0 {
		args = append(args, "-p", "127.0.0.1::"+strconv.Itoa(spec.Port))
	}
	args = append(args, spec.Image)
	args = append(args, spec.Args...)
	tb.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", "-v", c.Name).Run() })
	if out, err := exec.CommandContext(ctx, "docker", args...).CombinedOutput(); err != nil {
		tb.Fatalf("docker run: %v: %s", err, out)
	}
	return c
}

// HostPort is the 127.0.0.1 port published for port.
func (c *Container) HostPort(ctx context.Context, port int) int {
	c.tb.Helper()
	out, err := exec.CommandContext(ctx, "docker", "port", c.Name, fmt.Sprintf("%d/tcp", port)).Output()
	if err != nil {
		c.tb.Fatalf("docker port: %v", err)
	}
	_, p, err := net.SplitHostPort(strings.TrimSpace(strings.Split(string(out), "\n")[0]))
	if err != nil {
		c.tb.Fatalf("docker port %q: %v", out, err)
	}
	n, _ := strconv.Atoi(p)
	return n
}

// Logs is the container's output so far.
func (c *Container) Logs() string {
	out, _ := exec.Command("docker", "logs", c.Name).CombinedOutput()
	return string(out)
}

// WaitFor calls probe until it succeeds, the container stops running, or
// ctx ends; it fails tb with the container's log otherwise.
func (c *Container) WaitFor(ctx context.Context, probe func(context.Context) error) time.Duration {
	c.tb.Helper()
	t0 := time.Now()
	var last error
	for {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		last = probe(pctx)
		cancel()
		if last == nil {
			return time.Since(t0)
		}
		out, _ := exec.Command("docker", "inspect", "-f", "{{.State.Running}}", c.Name).Output()
		if strings.TrimSpace(string(out)) != "true" {
			c.tb.Fatalf("container exited before it was ready (last probe: %v); log:\n%s", last, c.Logs())
		}
		select {
		case <-ctx.Done():
			c.tb.Fatalf("not ready: %v; log:\n%s", last, c.Logs())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Exec runs cmd in the container as user; stdout, when not nil, gets its
// output. An error carries the command's stderr.
func (c *Container) Exec(ctx context.Context, user string, cmd []string, stdout io.Writer) error {
	args := append([]string{"exec", "-u", user, c.Name}, cmd...)
	x := exec.CommandContext(ctx, "docker", args...)
	var stderr bytes.Buffer
	x.Stdout, x.Stderr = stdout, &stderr
	if err := x.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", cmd[0], err, strings.TrimSpace(stderr.String()))
	}
	return nil
}

// CopyIn puts files (name → local path) and inline contents into dir,
// readable by root only.
func (c *Container) CopyIn(ctx context.Context, dir string, files map[string]string, inline map[string][]byte) error {
	tmp, err := os.MkdirTemp("", "enginetest-copy")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for name, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		inline = mergeInline(inline, name, data)
	}
	for name, data := range inline {
		if err := os.WriteFile(filepath.Join(tmp, name), data, 0o600); err != nil {
			return err
		}
	}
	if err := c.Exec(ctx, "root", []string{"install", "-d", "-m", "0700", dir}, nil); err != nil {
		return err
	}
	if out, err := exec.CommandContext(ctx, "docker", "cp", tmp+"/.", c.Name+":"+path.Clean(dir)).CombinedOutput(); err != nil {
		return fmt.Errorf("docker cp: %w: %s", err, out)
	}
	return c.Exec(ctx, "root", []string{"chown", "-R", "root:root", dir}, nil)
}

func mergeInline(m map[string][]byte, name string, data []byte) map[string][]byte {
	out := map[string][]byte{name: data}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// MemoryMiB is the container's memory use as docker stats reports it.
func (c *Container) MemoryMiB(ctx context.Context) float64 {
	c.tb.Helper()
	out, err := exec.CommandContext(ctx, "docker", "stats", "--no-stream", "--format", "{{.MemUsage}}", c.Name).Output()
	if err != nil {
		c.tb.Fatalf("docker stats: %v", err)
	}
	used, _, _ := strings.Cut(strings.TrimSpace(string(out)), " /")
	for unit, f := range map[string]float64{"GiB": 1024, "MiB": 1, "KiB": 1.0 / 1024} {
		if v, ok := strings.CutSuffix(used, unit); ok {
			n, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return n * f
			}
		}
	}
	c.tb.Fatalf("docker stats: cannot read %q", out)
	return 0
}

// Files reads an image's files the way the Docker runtime does: from a
// created, never started container (docker cp … -), removed when tb ends.
type Files struct {
	name string
}

// ImageFiles creates the container for Files.
func ImageFiles(ctx context.Context, tb testing.TB, image string) *Files {
	tb.Helper()
	var b [5]byte
	_, _ = rand.Read(b[:])
	f := &Files{name: "sbx-svctest-files-" + hex.EncodeToString(b[:])}
	tb.Cleanup(func() { _ = exec.Command("docker", "rm", "-f", f.name).Run() })
	if out, err := exec.CommandContext(ctx, "docker", "create", "--name", f.name, image).CombinedOutput(); err != nil {
		tb.Fatalf("docker create: %v: %s", err, out)
	}
	return f
}

// Read returns a tar stream of p; an error wrapping fs.ErrNotExist when
// the image has none.
func (f *Files) Read(ctx context.Context, p string) (io.ReadCloser, error) {
	out, err := exec.CommandContext(ctx, "docker", "cp", f.name+":"+p, "-").Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) && (strings.Contains(string(ee.Stderr), "Could not find the file") || strings.Contains(string(ee.Stderr), "No such container:path")) {
			return nil, fmt.Errorf("%s: %w", p, fs.ErrNotExist)
		}
		return nil, fmt.Errorf("docker cp %s: %w", p, err)
	}
	return io.NopCloser(bytes.NewReader(out)), nil
}

// Wait waits for the container to stop and returns its exit code.
func (c *Container) Wait(ctx context.Context) int {
	c.tb.Helper()
	out, err := exec.CommandContext(ctx, "docker", "wait", c.Name).Output()
	if err != nil {
		c.tb.Fatalf("docker wait: %v", err)
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		c.tb.Fatalf("docker wait: %q", out)
	}
	return n
}
