package views

import (
	"fmt"
	"io"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/records"
	"github.com/sandboxer/sandboxer/state"
)

func recordPublish(r *state.Record) config.Publish { return records.Publish(r) }

// reachText adds the user networks and a non-default exposure to a
// record's text.
func reachText(w io.Writer, r *state.Record) {
	if len(r.Reach.Networks) > 0 {
		fmt.Fprintf(w, "  networks    = %s\n", listText(r.Reach.Networks))
	}
	if p := recordPublish(r); !p.IsDefault() {
		fmt.Fprintf(w, "  exposure    = %q\n", p.String())
	}
}

// serviceReachText adds a service's in-network endpoint and CA file.
func serviceReachText(w io.Writer, c state.Credentials) {
	if c.NetworkHost != "" {
		fmt.Fprintf(w, "    network_endpoint     = %q\n", fmt.Sprintf("%s:%d", c.NetworkHost, c.NetworkPort))
	}
	if c.CAFile != "" {
		fmt.Fprintf(w, "    ca_file              = %q\n", c.CAFile)
	}
}
