package cli

import (
	"errors"
	"fmt"
	"io"
)

// ExitError ends a command with a specific exit code. A nil Err means the
// command already told the user everything (rendered diagnostics, or
// --detailed-exitcode's "changes present").
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

func (e *ExitError) Unwrap() error { return e.Err }

// errReported is returned after diagnostics were rendered: exit 1, nothing
// more to print.
var errReported = &ExitError{Code: 1}

// exitCode maps a command's error to the process exit code and prints what
// has not been printed yet. It is the only place exit codes are decided.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	var ee *ExitError
	if errors.As(err, &ee) {
		if ee.Err != nil {
			fmt.Fprintf(stderr, "Error: %s\n", ee.Err)
		}
		return ee.Code
	}
	fmt.Fprintf(stderr, "Error: %s\n", err)
	return 1
}
