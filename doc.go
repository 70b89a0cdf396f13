// Package sandboxer is sandboxer's one front door and its only
// orchestrator: open a configuration directory, then plan, apply (a plan
// or a saved plan file) and destroy declared sandboxes, request, release,
// extend and list on-demand ones, snapshot, restore or reset their data,
// and hand out a PostgreSQL database per test (Database), with the same
// cache rule, allowlist, state file and locks as the CLI. It reaps (Reap)
// and runs the janitor that reaps on one of the processes sharing a state
// (RunJanitor), and says whether a serving replica is ready (Ready) and
// how many instances each block holds (Levels). The CLI, the HTTP server
// and the test helper call this package and nothing else runs plan,
// apply, the broker or the reaper: it hands none of them out. It is also
// the composition
// root: compose.go alone names a concrete runtime (the Docker provider)
// and sets it up from Options; everything else talks to apply.Provider and
// the capabilities of apply/capabilities.go.
//
//	sb, err := sandboxer.Open(ctx, "testdata/sbx", sandboxer.Options{})
//	if err != nil { … }
//	defer sb.Close()
//	s, err := sb.Request(ctx, "sandbox.agent", sandboxer.RequestOptions{Key: "dev-7"})
//	pgURL := s.URL("postgres")
//
// Errors are classified once (Classify) for errors.Is (ErrNotFound, ErrNotAllowed,
// ErrBusy, ErrInvalid, ErrConflict, ErrEngineUnreachable) and errors.As
// (*Error with the code and allowlist; *ConfigError with HCL
// diagnostics). The same sentinels match errors from the HTTP client,
// package apiclient. Package sandboxertest builds a test helper on both.
//
// What this package must never do: print (it returns data; rendering is
// the CLI's), read flags or process-wide settings other than through
// Options, or put credentials into an error.
package sandboxer
