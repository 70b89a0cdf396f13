package views

import (
	"fmt"
	"io"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
)

// recordPublish is a record's exposure; records made before it was kept
// were loopback without TLS.
func recordPublish(r *state.Record) config.Publish {
	p := config.Publish{Address: r.Reach.PublishAddress, AdvertiseHost: r.Reach.AdvertiseHost, TLS: r.Reach.TLS}
	if p.Address == "" {
		p.Address = config.DefaultPublishAddress
	}
	if p.AdvertiseHost == "" {
		p.AdvertiseHost = config.DefaultPublishAddress
	}
	return p
}

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

func addReach(ji *JSONInstance, r *state.Record) {
	ji.Networks = r.Reach.Networks
	for svc, c := range r.Credentials {
		if c.NetworkHost == "" {
			continue
		}
		if ji.NetworkEndpoints == nil {
			ji.NetworkEndpoints = map[string]string{}
		}
		ji.NetworkEndpoints[svc] = fmt.Sprintf("%s:%d", c.NetworkHost, c.NetworkPort)
	}
	if p := recordPublish(r); !p.IsDefault() {
		ji.Exposure = p.String()
	}
}
