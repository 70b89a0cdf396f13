// Package sandboxer is the Go entry point to sandboxer: open a
// configuration directory, then request, release, extend and list
// on-demand sandboxes, or plan and apply declared ones, with the same
// cache rule, allowlist, state file and locks as the CLI.
//
//	sb, err := sandboxer.Open(ctx, "testdata/sbx", sandboxer.Options{})
//	if err != nil { … }
//	defer sb.Close()
//	s, err := sb.Request(ctx, "sandbox.agent", sandboxer.RequestOptions{Key: "dev-7"})
//	pgURL := s.URL("postgres")
//
// Errors are classified for errors.Is (ErrNotFound, ErrNotAllowed,
// ErrBusy, ErrInvalid, ErrConflict, ErrEngineUnreachable) and errors.As
// (*Error with the code and allowlist; *ConfigError with HCL
// diagnostics). The same sentinels match errors from the HTTP client,
// package apiclient. Package sandboxertest builds a test helper on both.
//
// What this package must never do: print (it returns data; rendering is
// the CLI's), read flags or process-wide settings other than through
// Options, or put credentials into an error.
package sandboxer
