package cli

import (
	"io"
	"log/slog"
	"os/signal"
	"sync"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/internal/mcpserver"
)

// MCPOptions are the flags of `sandboxer mcp`.
type MCPOptions struct {
	f                   *Factory
	OnDemand            OnDemandOptions
	ReleaseOnDisconnect bool
}

func newMCPCmd(f *Factory, runF func(*MCPOptions) error) *cobra.Command {
	opts := &MCPOptions{f: f}
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the on-demand sandboxes to an agent as MCP tools over stdio",
		Long: "Run a Model Context Protocol server on standard input and output for an agent\n" +
			"harness: request_sandbox, release_sandbox, extend_sandbox, list_sandboxes,\n" +
			"snapshot_sandbox, reset_sandbox and list_features, over the configuration\n" +
			"and state of this directory, with the same cache rule and locks as the CLI.\n" +
			"Logs go to stderr. With --release-on-disconnect, every instance the session\n" +
			"requested is released when the client goes away. serve offers the same\n" +
			"server over HTTP at /mcp.",
		Example: `  sandboxer mcp --release-on-disconnect
  # an agent harness's mcpServers entry:
  # {"sandboxer": {"command": "sandboxer", "args": ["--chdir", "/repo", "mcp"]}}`,
		Args: rangeArgs(0, 0),
		RunE: func(cmd *cobra.Command, args []string) error {
			if runF != nil {
				return runF(opts)
			}
			return mcpRun(cmd, opts)
		},
	}
	opts.OnDemand.bind(cmd.Flags(), sandboxer.DefaultLockTimeout)
	cmd.Flags().BoolVar(&opts.ReleaseOnDisconnect, "release-on-disconnect", false, "release every instance the session requested when it ends")
	return cmd
}

func mcpRun(cmd *cobra.Command, opts *MCPOptions) error {
	f := opts.f
	// A client that dies closes our stdout and stderr: a write there must
	// fail (and end the session, which releases what it held), never kill
	// the process with SIGPIPE halfway through its releases.
	signal.Ignore(syscall.SIGPIPE)
	serveGC(f)
	opts.OnDemand.forward = true // its URLs are handed out while the session runs
	s, err := openOnDemand(f, opts.OnDemand)
	if err != nil {
		return err
	}
	defer s.close()
	srv := mcpserver.New(s.lib, mcpserver.Options{Version: Version, ReleaseOnDisconnect: opts.ReleaseOnDisconnect,
		Logger: slog.New(slog.NewTextHandler(&stickyWriter{w: f.IO.Err}, nil)), Base: f.hard})
	// Stdout is the protocol's: nothing else may write there.
	err = srv.RunStdio(cmd.Context(), f.IO.In, f.IO.Out)
	srv.Wait()
	if err != nil && cmd.Context().Err() == nil {
		return err
	}
	return nil
}

// stickyWriter is the log's stderr: after its first failed write (the
// reader is gone) it drops what follows instead of trying again.
type stickyWriter struct {
	mu     sync.Mutex
	w      io.Writer
	failed bool
}

func (s *stickyWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failed {
		return len(p), nil
	}
	if _, err := s.w.Write(p); err != nil {
		s.failed = true
	}
	return len(p), nil
}
