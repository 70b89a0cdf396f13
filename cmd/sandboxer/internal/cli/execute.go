package cli

import (
	"bufio"
	"errors"
	"fmt"
	"strings"
)

// errCancelled is a declined confirmation: nothing changed, exit 1.
var errCancelled = errors.New("cancelled: nothing was changed")

// confirm asks for "yes" on stdin, as Terraform does.
func confirm(f *Factory, question string) error {
	fmt.Fprintf(f.IO.Out, "\n%s\n  Only 'yes' will be accepted to approve.\n\n  Enter a value: ", f.Color().Bold(question))
	line, err := bufio.NewReader(f.IO.In).ReadString('\n')
	fmt.Fprintln(f.IO.Out)
	if strings.TrimSpace(line) != "yes" {
		if err != nil && line == "" {
			return fmt.Errorf("%w (no answer on standard input; use --auto-approve to skip the question)", errCancelled)
		}
		return errCancelled
	}
	return nil
}
