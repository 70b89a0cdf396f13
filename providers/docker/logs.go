package docker

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/pkg/stdcopy"
)

// logTailLines is how much of a failing container's log an error quotes.
const logTailLines = 20

// logTail returns the last lines of a container's stdout and stderr, or ""
// when they cannot be read. Containers run without a TTY, so the stream is
// multiplexed and has to be split with stdcopy.
func (p *Provider) logTail(ctx context.Context, id string, n int) string {
	rc, err := p.cli.ContainerLogs(ctx, id, container.LogsOptions{
		ShowStdout: true,
		ShowStderr: true,
		Tail:       fmt.Sprint(n),
	})
	if err != nil {
		return ""
	}
	defer rc.Close()
	var out bytes.Buffer
	// Both streams go to one buffer so the lines keep their order.
	if _, err := stdcopy.StdCopy(&out, &out, io.LimitReader(rc, 1<<20)); err != nil && out.Len() == 0 {
		return ""
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// serviceError is a failure of one service's container, with the tail of
// its log. Its text is scrubbed of secrets before it leaves Create.
type serviceError struct {
	Service   string
	Container string // name
	Err       error
	Log       string
}

func (e *serviceError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (container %s): %v", e.Service, e.Container, e.Err)
	if strings.TrimSpace(e.Log) != "" {
		fmt.Fprintf(&b, "\ncontainer log (last %d lines):", logTailLines)
		for _, l := range strings.Split(e.Log, "\n") {
			b.WriteString("\n  | ")
			b.WriteString(strings.TrimRight(l, "\r"))
		}
	}
	return b.String()
}

func (e *serviceError) Unwrap() error { return e.Err }
