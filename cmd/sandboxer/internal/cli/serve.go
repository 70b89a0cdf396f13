package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/events"
	"github.com/sandboxer/sandboxer/internal/dashboard"
	"github.com/sandboxer/sandboxer/internal/mcpserver"
	"github.com/sandboxer/sandboxer/internal/server"
	"github.com/sandboxer/sandboxer/internal/tenants"
)

// ServeOptions are the flags of `sandboxer serve`.
type ServeOptions struct {
	f               *Factory
	OnDemand        OnDemandOptions
	Listen          string
	TokenFile       string
	TenantsFile     string
	AddrFile        string
	ReapInterval    time.Duration
	ShutdownTimeout time.Duration
	ShutdownDelay   time.Duration
	LogFormat       string
	// MCPReleaseOnDisconnect: see mcpserver.Options.ReleaseOnDisconnect.
	MCPReleaseOnDisconnect bool
	// Dashboard serves the live dashboard at / (its feed at
	// /v1/dashboard).
	Dashboard bool
	// KubeAuth is the audience ServiceAccount tokens must be for; ""
	// turns ServiceAccount tokens off (serve_kubeauth.go).
	KubeAuth string
	// Kubeconfig reaches the API server that reviews them (else
	// KUBECONFIG, else in-cluster).
	Kubeconfig string
}

// mcpPath is where serve offers the MCP server over streamable HTTP.
const mcpPath = "/mcp"

// mcpSessionTimeout ends an MCP session that made no call for that long
// (with --mcp-release-on-disconnect, when sessions live in serve).
const mcpSessionTimeout = 10 * time.Minute

func newServeCmd(f *Factory, runF func(*ServeOptions) error) *cobra.Command {
	opts := &ServeOptions{f: f}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the on-demand API over HTTP for agents",
		Long: "Serve POST /v1/request, /v1/release, /v1/extend, GET /v1/sandboxes, /healthz,\n" +
			"/readyz and /metrics, sharing state and locks with the CLI. Every route but\n" +
			"/healthz and /readyz needs \"Authorization: Bearer TOKEN\"; the token comes from\n" +
			"--token-file or SANDBOXER_API_TOKEN, and serve refuses to start without one.\n" +
			"/metrics (Prometheus text) is the operator's token's only. /readyz answers 503\n" +
			"when the state or a runtime does not answer, and from the first signal on. A\n" +
			"janitor runs reap every --reap-interval on one replica of those sharing the\n" +
			"state. SIGTERM or Ctrl-C stops accepting calls, hands the janitor over and waits\n" +
			"for those in flight (a second one abandons them). GET /v1/sandboxes lists the\n" +
			"on-demand instances, without credentials. The configuration is read once, at\n" +
			"start: restart serve after changing it.\n\n" +
			"With --tenants FILE, each tenant's tokens (kept as SHA-256 hashes) act for that\n" +
			"tenant: its keys are its own, it sees only what it owns (another's is\n" +
			"not_found), and its quotas hold (quota_exceeded; 429 rate_limited). The file\n" +
			"is reread when it changes or on SIGHUP; a bad one is logged and the previous\n" +
			"one kept. /mcp is stateless (any replica answers any call) unless\n" +
			"--mcp-release-on-disconnect.\n\n" +
			"With --kube-auth, a pod's projected ServiceAccount token (audience sandboxer,\n" +
			"or --kube-auth=AUDIENCE) acts for the tenant whose service_accounts admit its\n" +
			"namespace:name: the cluster's API server reviews it (TokenReview; serve's own\n" +
			"identity needs create on tokenreviews, system:auth-delegator), reached in-cluster\n" +
			"or through --kubeconfig/KUBECONFIG. Answers are kept 30 s at most, by the\n" +
			"token's SHA-256. A token for another audience, expired, or of a ServiceAccount\n" +
			"no tenant admits is 401; an API server that cannot answer is 503.\n\n" +
			"A live dashboard is at / (open it in a browser and give it a token: the\n" +
			"operator's shows everything, a tenant's only what it holds): instances with\n" +
			"their TTLs counting down, pool levels, this process's last events and a chart\n" +
			"of claim and cold-start latency over the last hour. The page carries no data;\n" +
			"it polls GET /v1/dashboard with the token. --dashboard=false turns it off.\n\n" +
			"Logs go to stderr through log/slog, one record per call (method, path,\n" +
			"status, duration, address; never a body or a credential), as logfmt text or,\n" +
			"with --log-format json, JSON lines; the dashboard's successful polls are not\n" +
			"logged.",
		Example: "  SANDBOXER_API_TOKEN=$(openssl rand -hex 16) sandboxer serve --listen 127.0.0.1:8080\n" +
			"  sandboxer serve --token-file token.txt --listen 127.0.0.1:0 --addr-file addr.txt --log-format json\n" +
			"  curl -H \"Authorization: Bearer $SANDBOXER_API_TOKEN\" -d '{\"address\":\"sandbox.agent\",\"key\":\"dev-7\",\"profile\":\"rag\",\"prefix\":\"ROBOCO_TEST_\"}' http://127.0.0.1:8080/v1/request",
		Args: rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return serveRun(cmd, opts)
		},
	}
	fs := cmd.Flags()
	opts.OnDemand.bind(fs, sandboxer.DefaultLockTimeout)
	fs.StringVar(&opts.Listen, "listen", "127.0.0.1:8080", "`ADDR` to listen on (host:port; port 0 picks a free one)")
	fs.StringVar(&opts.TokenFile, "token-file", "", "read the bearer token from `FILE` (else SANDBOXER_API_TOKEN)")
	fs.StringVar(&opts.TenantsFile, "tenants", "", "accept the tenants of `FILE` (HCL; token hashes, blocks, quotas) beside the operator's token; reloaded on change or SIGHUP")
	fs.StringVar(&opts.AddrFile, "addr-file", "", "write the address actually listened on to `FILE` once ready")
	fs.DurationVar(&opts.ReapInterval, "reap-interval", time.Minute, "how often the janitor reaps (0 turns it off)")
	fs.DurationVar(&opts.ShutdownTimeout, "shutdown-timeout", 2*time.Minute, "how long shutdown waits for calls in flight")
	fs.DurationVar(&opts.ShutdownDelay, "shutdown-delay", 0, "after the first signal, keep serving this long with /readyz answering 503 (while a balancer drops this replica) before closing the listener")
	fs.StringVar(&opts.LogFormat, "log-format", "text", "log records as `text` (logfmt) or json")
	fs.BoolVar(&opts.MCPReleaseOnDisconnect, "mcp-release-on-disconnect", false, "keep MCP sessions at /mcp in this process and release every instance a session requested when it ends (else /mcp is stateless: any replica answers, instances end by their ttl)")
	fs.BoolVar(&opts.Dashboard, "dashboard", true, "serve the live dashboard at / (its data at GET /v1/dashboard, behind the token)")
	fs.StringVar(&opts.KubeAuth, "kube-auth", "", "accept Kubernetes ServiceAccount tokens for `AUDIENCE` (--kube-auth alone: sandboxer), verified by TokenReview and mapped to tenants by their service_accounts")
	fs.Lookup("kube-auth").NoOptDefVal = kubeAuthAudience
	fs.StringVar(&opts.Kubeconfig, "kubeconfig", "", "with --kube-auth, reach the API server through `FILE` (else KUBECONFIG, else the in-cluster config)")
	fs.StringVar(&opts.OnDemand.Replica, "replica", "", "name this process in events and logs when several serve one state (also SANDBOXER_REPLICA; default HOST-PID with a PostgreSQL backend)")
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
	serveGC(f)
	if opts.LogFormat != "text" && opts.LogFormat != "json" {
		return fmt.Errorf("--log-format %q: must be text or json", opts.LogFormat)
	}
	token, err := apiToken(f, opts.TokenFile)
	if err != nil {
		return err
	}
	if opts.ReapInterval < 0 {
		return fmt.Errorf("--reap-interval must not be negative")
	}
	if opts.ShutdownDelay < 0 {
		return fmt.Errorf("--shutdown-delay must not be negative")
	}
	accounts, err := serveKubeAuth(f, opts)
	if err != nil {
		return err
	}
	opts.OnDemand.Replica = replicaName(f, opts.OnDemand.Replica)
	// The metrics and the dashboard's recorder hear the library's
	// events, so they exist before it.
	var recorder *dashboard.Recorder
	if opts.Dashboard {
		recorder = dashboard.NewRecorder()
	}
	var metrics *server.Metrics
	opts.OnDemand.sinkFor = func(cfg *config.Config) events.Sink {
		var blocks []string
		for _, name := range onDemandBlocks(cfg) {
			blocks = append(blocks, "sandbox."+name)
		}
		metrics = server.NewMetrics(blocks)
		if recorder != nil {
			return events.Multi{metrics, recorder}
		}
		return metrics
	}
	opts.OnDemand.forward = true // its URLs are handed out while it runs
	s, err := openOnDemand(f, opts.OnDemand)
	if err != nil {
		return err
	}
	defer s.close()
	ctx := cmd.Context() // ends on the first SIGTERM/Ctrl-C
	if err := s.lib.Connect(ctx); err != nil {
		return err
	}
	logger := serveLogger(f, opts.LogFormat)
	if opts.OnDemand.Replica != "" {
		logger = logger.With("replica", opts.OnDemand.Replica)
	}
	api, err := server.New(s.lib, token, logger, f.hard)
	if err != nil {
		return err
	}
	if recorder != nil {
		api.ServeDashboard(dashboard.New(s.lib, recorder))
	}
	api.ServeMetrics(metrics)
	if accounts != nil {
		api.SetServiceAccounts(accounts)
		logger.Info("ServiceAccount tokens accepted", "audience", accounts.Audience())
		if opts.TenantsFile == "" {
			logger.Warn("--kube-auth without --tenants: no tenant admits a ServiceAccount, so their tokens are refused")
		}
	}
	if opts.TenantsFile != "" {
		path := f.Path(opts.TenantsFile)
		blocks := onDemandBlocks(s.lib.Config())
		set, err := tenants.Load(path, blocks)
		if err != nil {
			return fmt.Errorf("refusing to start: %w", err)
		}
		api.SetTenants(set)
		logger.Info("tenants file loaded", "file", path, "tenants", len(set.Names()))
		warnServiceAccounts(logger, set, accounts != nil)
		go watchTenants(ctx, path, blocks, api, logger, accounts != nil)
	}
	// Stateless unless the instances of a session are to be released when
	// it ends: that needs the session in this process (one replica, or a
	// balancer with affinity).
	stateless := !opts.MCPReleaseOnDisconnect
	agents := mcpserver.New(s.lib, mcpserver.Options{Version: Version, ReleaseOnDisconnect: opts.MCPReleaseOnDisconnect,
		Stateless: stateless, Logger: logger, Base: f.hard})
	// Stateless: no protocol session lives in this process, so any
	// replica answers any call (behind a balancer without affinity) at
	// the current protocol revision. An instance requested over HTTP
	// ends by its ttl (agents extend it as a heartbeat). With
	// --mcp-release-on-disconnect sessions live here, and an idle one
	// ends after mcpSessionTimeout, so an agent that dies without
	// closing has its instances released too.
	api.Handle(mcpPath, mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return agents.MCP() },
		&mcp.StreamableHTTPOptions{Stateless: stateless, SessionTimeout: mcpSessionTimeout}))
	ln, err := net.Listen("tcp", opts.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", opts.Listen, err)
	}
	hs := &http.Server{
		Handler:           api,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelError),
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
	logger.Info(fmt.Sprintf("listening on http://%s", ln.Addr()), "addr", ln.Addr().String(), "state", s.lib.Store().Describe())

	// The janitor (the library's: one replica of those sharing the state
	// leads) stops at the first signal, after the pass in progress, and
	// releases its lock: another replica takes over at its next tick.
	stopJanitor := make(chan struct{})
	var janitor sync.WaitGroup
	if opts.ReapInterval > 0 {
		janitor.Add(1)
		go func() {
			defer janitor.Done()
			_ = s.lib.RunJanitor(f.hard, janitorOptions(opts.ReapInterval, stopJanitor, logger, metrics))
		}()
	}

	// Warm pools are kept full from the start and refilled after each
	// claim; the first signal stops the keeper with the janitor.
	poolCtx, stopPools := context.WithCancel(f.hard)
	defer stopPools()
	janitor.Add(1)
	go func() {
		defer janitor.Done()
		s.lib.KeepPoolsFull(poolCtx, func(addr string, err error) {
			logger.Error("pool fill failed", "pool", addr, "error", err.Error())
		})
	}()

	select {
	case err := <-served:
		close(stopJanitor)
		stopPools()
		janitor.Wait()
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	// From here /readyz answers 503. The janitor returns after its pass,
	// releasing its lock (another replica leads from its next tick), and
	// the pool keeper stops. With --shutdown-delay calls are still served
	// while a balancer notices; then the listener closes (no new call is
	// accepted) and those in flight finish.
	api.Drain()
	close(stopJanitor)
	stopPools()
	if opts.ShutdownDelay > 0 {
		logger.Info("draining: /readyz answers 503; still serving", "delay", opts.ShutdownDelay)
		select {
		case <-time.After(opts.ShutdownDelay):
		case <-f.hard.Done():
		}
	}
	logger.Info("shutting down: no new calls; waiting for calls in flight", "timeout", opts.ShutdownTimeout)
	// MCP event streams stay open until their sessions end.
	agents.Close()
	sctx, cancel := context.WithTimeout(f.hard, opts.ShutdownTimeout)
	defer cancel()
	err = hs.Shutdown(sctx)
	janitor.Wait()
	agents.Wait() // releases of sessions that ended
	if err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	logger.Info("stopped")
	return nil
}

// serveLogger writes slog records to stderr, text or JSON.
func serveLogger(f *Factory, format string) *slog.Logger {
	if format == "json" {
		return slog.New(slog.NewJSONHandler(f.IO.Err, nil))
	}
	return slog.New(slog.NewTextHandler(f.IO.Err, nil))
}

// janitorOptions log the library's janitor (and count it in the
// metrics): leadership changes, what each pass did, its errors. A damaged
// record is logged when it is first seen (and again after it was gone),
// not on every pass.
func janitorOptions(every time.Duration, stop <-chan struct{}, logger *slog.Logger, m *server.Metrics) sandboxer.JanitorOptions {
	warned := map[string]bool{}
	return sandboxer.JanitorOptions{Every: every, Interrupt: stop,
		OnRole: func(r sandboxer.JanitorRole) {
			switch {
			case r.Err != nil:
				logger.Error("janitor: cannot take the janitor lock", "error", r.Err.Error())
			case r.Leads:
				logger.Info("janitor: this replica leads")
			default:
				logger.Info("janitor: another replica leads", "holder_pid", r.Holder.PID, "holder_host", r.Holder.Host)
			}
			if m != nil && r.Err == nil {
				m.SetJanitorLeader(r.Leads)
			}
		},
		OnPass: func(rep *sandboxer.ReapReport, err error) {
			if m != nil {
				m.ObserveReap(rep, err)
			}
			if err != nil {
				logger.Error("reap failed", "error", err.Error())
			}
			warned = warnDamaged(logger, rep.Damaged, warned)
			if len(rep.Expired) > 0 || len(rep.Orphans) > 0 || len(rep.Unheld) > 0 {
				logger.Info("reap", "expired", len(rep.Expired), "unheld", len(rep.Unheld), "orphans", len(rep.Orphans), "skipped", len(rep.Skipped))
			}
			for host, names := range rep.Databases {
				logger.Info("reap databases", "host", host, "dropped", len(names))
			}
		}}
}

// warnDamaged logs the damaged records not in warned, and returns the set
// seen this pass.
func warnDamaged(logger *slog.Logger, damaged []sandboxer.DamagedRecord, warned map[string]bool) map[string]bool {
	seen := make(map[string]bool, len(damaged))
	for _, d := range damaged {
		seen[d.Address] = true
		if !warned[d.Address] {
			logger.Warn("reap: left alone, its state record cannot be read", "address", d.Address, "error", fmt.Sprint(d.Err))
		}
	}
	return seen
}

// replicaName is --replica, else SANDBOXER_REPLICA, else HOST-PID when
// the state is in a database (where replicas share it), else "".
func replicaName(f *Factory, flag string) string {
	if flag != "" {
		return flag
	}
	if v := f.Getenv("SANDBOXER_REPLICA"); v != "" {
		return v
	}
	if u, _ := backendURL(f.backendChoice()); u != "" {
		h, err := os.Hostname()
		if err != nil {
			h = "unknown"
		}
		return fmt.Sprintf("%s-%d", h, os.Getpid())
	}
	return ""
}
