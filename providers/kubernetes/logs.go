package kubernetes

import (
	"context"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// logTailLines is how much of a failing container's log an error quotes.
const logTailLines = 20

// logTail returns the last lines of a container's log, "" when it cannot
// be read. Callers scrub it: a server can echo what it was given.
func (p *Provider) logTail(ctx context.Context, pod, container string, lines int64) string {
	b, err := p.cs.CoreV1().Pods(p.ns).GetLogs(pod, &corev1.PodLogOptions{Container: container, TailLines: ptr.To(lines)}).DoRaw(ctx)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// serviceError is a service that failed to become ready, with the tail of
// its container's log (scrubbed of secrets).
type serviceError struct {
	Service, Pod string
	Err          error
	Log          string
}

func (e *serviceError) Error() string {
	msg := e.Service + " (pod " + e.Pod + "): " + e.Err.Error()
	if e.Log != "" {
		msg += "\n--- last lines of its log ---\n" + e.Log
	}
	return msg
}

func (e *serviceError) Unwrap() error { return e.Err }
