package docker

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"

	"github.com/sandboxer/sandboxer/providers/internal/kit"
)

// execIn runs cmd inside a running container as user, streaming its
// stdout to stdout (nil: discarded). A non-zero exit is an error quoting
// the tail of its stderr. Nothing secret goes on cmd: the engines' tools
// reach their servers over the container's local socket, where the images
// trust local connections, so no password is needed at all.
func (p *Provider) execIn(ctx context.Context, id, user string, cmd []string, stdout io.Writer) error {
	return p.execStdin(ctx, id, user, cmd, nil, stdout)
}

// execStdin is execIn with stdin as the command's input (nil: none); the
// input's end closes the command's.
func (p *Provider) execStdin(ctx context.Context, id, user string, cmd []string, stdin io.Reader, stdout io.Writer) error {
	ex, err := p.cli.ContainerExecCreate(ctx, id, container.ExecOptions{
		User: user, Cmd: cmd, AttachStdout: true, AttachStderr: true, AttachStdin: stdin != nil,
	})
	if err != nil {
		return p.engineErr("exec "+cmd[0]+" in container "+shortID(id), err)
	}
	att, err := p.cli.ContainerExecAttach(ctx, ex.ID, container.ExecAttachOptions{})
	if err != nil {
		return p.engineErr("attach to "+cmd[0]+" in container "+shortID(id), err)
	}
	defer att.Close()
	if stdout == nil {
		stdout = io.Discard
	}
	if stdin != nil {
		go func() {
			_, _ = io.Copy(att.Conn, stdin)
			_ = att.CloseWrite()
		}()
	}
	var stderr kit.TailBuffer
	done := make(chan error, 1)
	go func() {
		_, err := stdcopy.StdCopy(stdout, &stderr, att.Reader)
		done <- err
	}()
	select {
	case err = <-done:
	case <-ctx.Done():
		att.Close()
		<-done
		return ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("%s: read output: %w", cmd[0], err)
	}
	ins, err := p.cli.ContainerExecInspect(ctx, ex.ID)
	if err != nil {
		return p.engineErr("inspect exec of "+cmd[0], err)
	}
	if ins.Running {
		// The streams closed just before the process was reaped.
		for i := 0; i < 50 && ins.Running; i++ {
			time.Sleep(10 * time.Millisecond)
			if ins, err = p.cli.ContainerExecInspect(ctx, ex.ID); err != nil {
				return p.engineErr("inspect exec of "+cmd[0], err)
			}
		}
	}
	if ins.ExitCode != 0 {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = "no error output"
		}
		return fmt.Errorf("%s exited with code %d: %s", cmd[0], ins.ExitCode, msg)
	}
	return nil
}

// copyIn puts local files into a running container under dir (created,
// mode 0755; files 0644 so the service user can read them whatever its
// uid), streamed rather than buffered: a dump can be large. name → local path.
func (p *Provider) copyIn(ctx context.Context, id, dir string, files map[string]string, inline map[string][]byte) error {
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(kit.WriteTar(pw, dir, files, inline))
	}()
	err := p.cli.CopyToContainer(ctx, id, "/", pr, container.CopyToContainerOptions{})
	pr.CloseWithError(io.ErrClosedPipe)
	if err != nil {
		return p.engineErr("copy files into container "+shortID(id), err)
	}
	return nil
}
