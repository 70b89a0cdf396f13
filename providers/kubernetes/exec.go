package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/sandboxer/sandboxer/providers/internal/kit"
)

// podRunner runs commands in one container of a pod over the exec API
// (services/postgres.Runner). The command runs as the container's user:
// the API has no way to choose another, and every container here runs
// as its image's service user already (podspec.go), which owns what the
// data movers touch. So the user a caller names is not switched to.
// Nothing secret goes on a command line: the engines' tools reach their
// servers over the container's local socket, which the images trust.
type podRunner struct {
	p         *Provider
	pod       string
	container string
}

// Exec runs cmd; stdout, when not nil, receives its output.
func (r podRunner) Exec(ctx context.Context, _ string, cmd []string, stdout io.Writer) error {
	return r.execStdin(ctx, cmd, nil, stdout)
}

// ExecStdin runs cmd with stdin as its input (contract.StdinRunner): a
// fork's hold ends when its input does, as on Docker.
func (r podRunner) ExecStdin(ctx context.Context, _ string, cmd []string, stdin io.Reader, stdout io.Writer) error {
	return r.execStdin(ctx, cmd, stdin, stdout)
}

// CopyIn puts files into dir with `tar -xf - -C /` fed from a stream:
// files maps names to local paths, inline names to contents. Files are
// 0644 in a 0755 directory, as on Docker.
// A cut stream writes the files again (retryCut).
func (r podRunner) CopyIn(ctx context.Context, dir string, files map[string]string, inline map[string][]byte) error {
	err := retryCut(ctx, "copy files into "+dir, r.pod, func() error {
		pr, pw := io.Pipe()
		go func() { pw.CloseWithError(kit.WriteTar(pw, dir, files, inline)) }()
		err := r.execStdin(ctx, []string{"tar", "-xf", "-", "-C", "/"}, pr, nil)
		pr.CloseWithError(io.ErrClosedPipe)
		return err
	})
	if err != nil {
		return fmt.Errorf("copy files into %s/%s: %w", r.pod, r.container, err)
	}
	return nil
}

// execStdin runs cmd with stdin (nil: none) and stdout (nil: discarded).
// A non-zero exit is an error quoting the tail of its stderr. It speaks
// the WebSocket protocol, falling back to SPDY for API servers that
// refuse the upgrade.
func (r podRunner) execStdin(ctx context.Context, cmd []string, stdin io.Reader, stdout io.Writer) error {
	p := r.p
	if p.rest == nil || p.params == nil {
		return errors.New("exec needs a real cluster connection")
	}
	req := p.cs.CoreV1().RESTClient().Post().Namespace(p.ns).Resource("pods").Name(r.pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{
			Container: r.container, Command: cmd,
			Stdin: stdin != nil, Stdout: true, Stderr: true,
		}, p.params)
	ws, err := remotecommand.NewWebSocketExecutor(p.rest, "GET", req.URL().String())
	if err != nil {
		return fmt.Errorf("exec %s: %w", cmd[0], err)
	}
	spdy, err := remotecommand.NewSPDYExecutor(p.rest, "POST", req.URL())
	if err != nil {
		return fmt.Errorf("exec %s: %w", cmd[0], err)
	}
	ex, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
	if err != nil {
		return fmt.Errorf("exec %s: %w", cmd[0], err)
	}
	if stdout == nil {
		stdout = io.Discard
	}
	var stderr kit.TailBuffer
	err = ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: stdin, Stdout: stdout, Stderr: &stderr})
	var exit utilexec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exit):
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = "no error output"
		}
		return fmt.Errorf("%s exited with code %d: %s", cmd[0], exit.ExitStatus(), msg)
	case ctx.Err() != nil:
		return ctx.Err()
	}
	return p.apiErr("create", "pods/exec", r.pod, err)
}
