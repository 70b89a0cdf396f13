package cli

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer/ondemand"
	"github.com/sandboxer/sandboxer/server"
)

// ServeOptions are the flags of `sandboxer serve`.
type ServeOptions struct {
	f               *Factory
	OnDemand        OnDemandOptions
	Listen          string
	TokenFile       string
	AddrFile        string
	ReapInterval    time.Duration
	ShutdownTimeout time.Duration
}

func newServeCmd(f *Factory, runF func(*ServeOptions) error) *cobra.Command {
	opts := &ServeOptions{f: f}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the on-demand API over HTTP for agents",
		Long: "Serve POST /v1/request, /v1/release, /v1/extend, GET /v1/sandboxes and /healthz,\n" +
			"sharing state and locks with the CLI. Every route but /healthz needs\n" +
			"\"Authorization: Bearer TOKEN\"; the token comes from --token-file or\n" +
			"SANDBOXER_API_TOKEN, and serve refuses to start without one. A janitor runs\n" +
			"reap every --reap-interval. SIGTERM or Ctrl-C stops accepting calls and waits\n" +
			"for those in flight (a second one abandons them). GET /v1/sandboxes lists the\n" +
			"on-demand instances, without credentials. The configuration is read once, at\n" +
			"start: restart serve after changing it.",
		Args: rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return serveRun(cmd, opts)
		},
	}
	fs := cmd.Flags()
	opts.OnDemand.bind(fs, ondemand.DefaultLockTimeout)
	fs.StringVar(&opts.Listen, "listen", "127.0.0.1:8080", "`ADDR` to listen on (host:port; port 0 picks a free one)")
	fs.StringVar(&opts.TokenFile, "token-file", "", "read the bearer token from `FILE` (else SANDBOXER_API_TOKEN)")
	fs.StringVar(&opts.AddrFile, "addr-file", "", "write the address actually listened on to `FILE` once ready")
	fs.DurationVar(&opts.ReapInterval, "reap-interval", time.Minute, "how often the janitor reaps (0 turns it off)")
	fs.DurationVar(&opts.ShutdownTimeout, "shutdown-timeout", 2*time.Minute, "how long shutdown waits for calls in flight")
	return cmd
}

// apiToken reads the token: --token-file wins over SANDBOXER_API_TOKEN.
func apiToken(f *Factory, file string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(f.Path(file))
		if err != nil {
			return "", fmt.Errorf("read --token-file: %w", err)
		}
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return "", fmt.Errorf("refusing to start: --token-file %s is empty", file)
		}
		return tok, nil
	}
	if tok := strings.TrimSpace(f.Getenv("SANDBOXER_API_TOKEN")); tok != "" {
		return tok, nil
	}
	return "", errors.New("refusing to start without an API token: set SANDBOXER_API_TOKEN or pass --token-file FILE")
}

func serveRun(cmd *cobra.Command, opts *ServeOptions) error {
	f := opts.f
	token, err := apiToken(f, opts.TokenFile)
	if err != nil {
		return err
	}
	if opts.ReapInterval < 0 {
		return fmt.Errorf("--reap-interval must not be negative")
	}
	s, err := openOnDemand(f, opts.OnDemand)
	if err != nil {
		return err
	}
	defer s.close()
	ctx := cmd.Context() // ends on the first SIGTERM/Ctrl-C
	if err := s.lib.Connect(ctx); err != nil {
		return err
	}
	logger := log.New(f.IO.Err, "sandboxer serve: ", log.LstdFlags|log.LUTC)
	api, err := server.New(s.broker(), token, logger, f.hard)
	if err != nil {
		return err
	}
	api.ServeData(s.lib.Data())
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", opts.Listen, err)
	}
	hs := &http.Server{
		Handler:           api,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          logger,
		// Calls run on the hard context: the first signal stops accepting
		// new calls, but a provision in flight finishes (or rolls back
		// on the second signal).
		BaseContext: func(net.Listener) context.Context { return f.hard },
	}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	if opts.AddrFile != "" {
		if err := os.WriteFile(f.Path(opts.AddrFile), []byte(ln.Addr().String()+"\n"), 0o600); err != nil {
			_ = hs.Close()
			return fmt.Errorf("write --addr-file: %w", err)
		}
	}
	logger.Printf("listening on http://%s (state %s)", ln.Addr(), s.lib.StatePath())

	stopJanitor := make(chan struct{})
	var janitor sync.WaitGroup
	if opts.ReapInterval > 0 {
		janitor.Add(1)
		go func() {
			defer janitor.Done()
			runJanitor(f.hard, stopJanitor, opts.ReapInterval, s.reaper(), logger)
		}()
	}

	select {
	case err := <-served:
		close(stopJanitor)
		janitor.Wait()
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Printf("shutting down: no new calls; waiting up to %s for calls in flight", opts.ShutdownTimeout)
	close(stopJanitor)
	sctx, cancel := context.WithTimeout(f.hard, opts.ShutdownTimeout)
	defer cancel()
	err = hs.Shutdown(sctx)
	janitor.Wait()
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Printf("stopped")
	return nil
}

// runJanitor reaps every interval until stop closes; a pass in progress
// finishes first. A damaged record is logged when it is first seen (and
// again after it was gone), not on every pass.
func runJanitor(ctx context.Context, stop <-chan struct{}, every time.Duration, r *ondemand.Reaper, logger *log.Logger) {
	t := time.NewTicker(every)
	defer t.Stop()
	warned := map[string]bool{}
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rep, err := r.Reap(ctx)
		if err != nil {
			logger.Printf("reap: %v", err)
		}
		if rep == nil {
			continue
		}
		warned = warnDamaged(logger, rep.Damaged, warned)
		if len(rep.Expired) > 0 || len(rep.Orphans) > 0 {
			logger.Printf("reap: %d expired sandbox(es) destroyed, %d orphaned resource(s) removed, %d skipped",
				len(rep.Expired), len(rep.Orphans), len(rep.Skipped))
		}
	}
}

// warnDamaged logs the damaged records not in warned, and returns the set
// seen this pass.
func warnDamaged(logger *log.Logger, damaged []ondemand.Damaged, warned map[string]bool) map[string]bool {
	seen := make(map[string]bool, len(damaged))
	for _, d := range damaged {
		seen[d.Address] = true
		if !warned[d.Address] {
			logger.Printf("reap: warning: %s: left alone, its state record cannot be read: %v", d.Address, d.Err)
		}
	}
	return seen
}
