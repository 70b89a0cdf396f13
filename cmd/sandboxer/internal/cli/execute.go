package cli

import (
	"bufio"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
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

// outputValues evaluates outputs against state, for printing after apply
// and for `output`.
func outputValues(cfg *config.Config, snap *state.Snapshot) (map[string]cty.Value, hcl.Diagnostics) {
	vals := map[config.Address]map[string]map[string]string{}
	for _, r := range snap.Records {
		addr, err := config.ParseAddress(r.Address)
		if err != nil {
			continue
		}
		svcs := map[string]map[string]string{}
		for svc, c := range r.Credentials {
			svcs[svc] = c.Attributes(svc)
		}
		vals[addr] = svcs
	}
	return cfg.EvalOutputs(vals)
}
