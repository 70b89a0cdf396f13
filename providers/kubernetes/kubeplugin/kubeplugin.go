// Package kubeplugin is the sandboxer-kubernetes program: the kubernetes
// runtime served to sandboxer over standard input and output
// (internal/plugin). It is a package rather than the command's main so
// the CLI's tests can run it as a command of their own.
package kubeplugin

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/plugin"
	"github.com/sandboxer/sandboxer/providers/kubernetes"
)

// Main serves one sandboxer until its standard input closes and returns
// the exit code.
func Main() int {
	// client-go logs through klog to stderr (client-side throttling of a
	// large apply, for one); what matters reaches the user as the
	// provider's errors.
	klog.SetOutput(io.Discard)
	klog.LogToStderr(false)
	// A sandboxer that ended abruptly closes the pipe this answers on: a
	// write then fails (and Serve returns, closing the provider) rather
	// than the signal killing the program.
	signal.Ignore(syscall.SIGPIPE)
	if len(os.Args) > 1 {
		fmt.Fprintf(os.Stderr, "%s is started by sandboxer, which talks to it over standard input and output; it takes no arguments\n", plugin.KubernetesProgram)
		return 1
	}
	if err := plugin.Serve(os.Stdin, os.Stdout, open); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", plugin.KubernetesProgram, err)
		return 1
	}
	return 0
}

// open is what the composition root did in process: connect, then set the
// knobs the caller chose.
func open(ctx context.Context, s plugin.Settings) (apply.Provider, error) {
	p, err := kubernetes.New(ctx, s.Provider, config.NewCatalog(s.Catalog))
	if err != nil {
		return nil, err
	}
	if s.CacheDir != "" {
		p.SetCacheDir(s.CacheDir)
	}
	p.ReadyTimeout = s.ReadyTimeout
	p.CADir = s.CADir
	return p, nil
}
