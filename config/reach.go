package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// DefaultPublishAddress is where ports are published unless the provider
// says otherwise (SPEC §7: loopback only).
const DefaultPublishAddress = "127.0.0.1"

// Publish says where a sandbox's ports are published on the engine's host
// and how handed-out URLs name that host.
type Publish struct {
	// Address is the host IP the ports are bound on.
	Address string `json:"address"`
	// AdvertiseHost is the host name or IP written into handed-out URLs:
	// advertise_host, else Address when it names one interface, else the
	// engine's host for a remote engine published beyond loopback, else
	// 127.0.0.1.
	AdvertiseHost string `json:"advertise_host"`
	// TLS is on for both services: always beyond loopback unless opted
	// out with tls = false.
	TLS bool `json:"tls,omitempty"`
}

// DefaultPublish is loopback without TLS, what every sandbox got before
// the publish settings existed.
func DefaultPublish() Publish {
	return Publish{Address: DefaultPublishAddress, AdvertiseHost: DefaultPublishAddress}
}

// IsDefault reports whether p is loopback-only without TLS.
func (p Publish) IsDefault() bool { return p == DefaultPublish() }

// String describes the exposure for plans, e.g.
// "published on 0.0.0.0 with TLS, advertised as db.example".
func (p Publish) String() string {
	if p.Address == PodAddress {
		if p.TLS {
			return "reached at its pod IP, with TLS"
		}
		return "reached at its pod IP, without TLS"
	}
	s := "published on " + p.Address
	if p.TLS {
		s += " with TLS"
	} else {
		s += " without TLS"
	}
	if p.AdvertiseHost != p.Address {
		s += ", advertised as " + p.AdvertiseHost
	}
	return s
}

// NetworkRef is one place the configuration names a user network, so a
// network the engine lacks can be blamed on it.
type NetworkRef struct {
	Name  string
	Range hcl.Range
}

// networkNameRE is what the Docker engine accepts as a network name.
var networkNameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

// reservedNetworks are the engine's predefined networks: "bridge" has no
// DNS and reaches every container on it, "host" and "none" cannot be
// joined by a container that publishes ports.
var reservedNetworks = []string{"bridge", "host", "none"}

// networkList evaluates a networks argument: a list of user network names,
// checked for form here and for existence at plan time (validate has no
// engine to ask).
func (l *loader) networkList(attr *hcl.Attribute, sc scope) ([]string, hcl.Diagnostics) {
	v, diags := l.ev.eval(attr.Expr, sc)
	items, _, more := listItems(v, attr.Expr, "networks")
	diags = append(diags, more...)
	var out []string
	for _, it := range items {
		switch {
		case !networkNameRE.MatchString(it.Value) || len(it.Value) > 128:
			diags = append(diags, errorDiag("Invalid network name",
				fmt.Sprintf("%q is not a Docker network name: it must start with a letter or digit and contain only letters, digits, \"_\", \".\" and \"-\".", it.Value),
				it.Range))
			continue
		case slices.Contains(reservedNetworks, it.Value):
			diags = append(diags, errorDiag("Invalid network name",
				fmt.Sprintf("%q is one of the engine's predefined networks (%s), which sandboxes cannot join. Create a user network (docker network create NAME) and name it here.",
					it.Value, strings.Join(reservedNetworks, ", ")),
				it.Range))
			continue
		}
		l.cfg.NetworkRefs = append(l.cfg.NetworkRefs, NetworkRef{Name: it.Value, Range: it.Range})
		out = append(out, it.Value)
	}
	return SortedUnique(out), diags
}

// decodePublish reads publish_address, advertise_host and tls from the
// provider block and derives the defaults. engineHost is the provider's
// host (or DOCKER_HOST), used to advertise a remote engine's address.
func (l *loader) decodePublish(p *Provider, content *hcl.BodyContent, sc scope) hcl.Diagnostics {
	var diags hcl.Diagnostics
	str := func(name string) (string, *hcl.Attribute, bool) {
		attr, ok := content.Attributes[name]
		if !ok {
			return "", nil, false
		}
		v, more := l.ev.eval(attr.Expr, sc)
		diags = append(diags, more...)
		s, ok, more := typed(v, attr.Expr, cty.String, name)
		diags = append(diags, more...)
		if !ok {
			return "", attr, false
		}
		return s.AsString(), attr, true
	}
	pub := DefaultPublish()
	addr := netip.MustParseAddr(DefaultPublishAddress)
	if s, attr, ok := str("publish_address"); ok {
		a, err := netip.ParseAddr(s)
		if err != nil || a.Zone() != "" {
			diags = append(diags, errorDiag("Invalid publish address",
				fmt.Sprintf("publish_address must be an IP address of the engine's host, such as \"127.0.0.1\", \"0.0.0.0\" or \"10.0.0.5\"; %q is not.", s),
				attr.Expr.Range()))
		} else {
			addr = a.Unmap()
			pub.Address = addr.String()
		}
	}
	pub.TLS = !addr.IsLoopback()
	if attr, ok := content.Attributes["tls"]; ok {
		v, more := l.ev.eval(attr.Expr, sc)
		diags = append(diags, more...)
		if bv, ok, more := typed(v, attr.Expr, cty.Bool, "tls"); ok {
			pub.TLS = bv.True()
			if !pub.TLS && publicAddress(addr) {
				diags = append(diags, errorDiag("TLS required on a public address",
					fmt.Sprintf("publish_address %q reaches beyond this host's private networks, so sandboxes published there must use TLS: "+
						"passwords would cross the network in clear text. Remove tls = false, or publish on loopback or a private address (10/8, 172.16/12, 192.168/16, fc00::/7).", pub.Address),
					attr.Expr.Range()))
			}
		} else {
			diags = append(diags, more...)
		}
	}
	advertise := ""
	if s, attr, ok := str("advertise_host"); ok {
		if err := checkHostName(s); err != nil {
			diags = append(diags, errorDiag("Invalid advertise_host",
				fmt.Sprintf("advertise_host is the host name or IP address handed-out URLs use to reach the engine's host; %q %s.", s, err),
				attr.Expr.Range()))
		} else {
			advertise = s
		}
	}
	switch {
	case advertise != "":
		pub.AdvertiseHost = advertise
	case !addr.IsUnspecified():
		pub.AdvertiseHost = pub.Address
	case remoteEngineHost(l.engineHost(p)) != "":
		pub.AdvertiseHost = remoteEngineHost(l.engineHost(p))
	default:
		pub.AdvertiseHost = DefaultPublishAddress
	}
	p.Publish = pub
	return diags
}

// engineHost is the provider's host, else DOCKER_HOST from the input.
func (l *loader) engineHost(p *Provider) string {
	if p.Host != "" {
		return p.Host
	}
	for i := len(l.in.Environ) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(l.in.Environ[i], "DOCKER_HOST="); ok {
			return v
		}
	}
	return ""
}

// remoteEngineHost returns the host of a tcp://, http(s):// or ssh://
// engine address, "" for a local socket or anything unparseable.
func remoteEngineHost(engine string) string {
	u, err := url.Parse(engine)
	if err != nil {
		return ""
	}
	switch u.Scheme {
	case "tcp", "http", "https", "ssh":
		h := u.Hostname()
		if a, err := netip.ParseAddr(h); err == nil && (a.IsLoopback() || a.IsUnspecified()) {
			return ""
		}
		return h
	}
	return ""
}

// publicAddress reports whether binding addr may expose a port beyond
// private networks: the unspecified address (every interface) or a global
// unicast address outside the private ranges.
func publicAddress(addr netip.Addr) bool {
	if addr.IsUnspecified() {
		return true
	}
	return !(addr.IsLoopback() || addr.IsPrivate() || addr.IsLinkLocalUnicast())
}

// hostLabelRE is one RFC 1123 label.
var hostLabelRE = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?$`)

// checkHostName accepts an IP address or an RFC 1123 host name, nothing
// with a scheme, port, path or spaces.
func checkHostName(s string) error {
	if a, err := netip.ParseAddr(s); err == nil {
		if a.IsUnspecified() {
			return fmt.Errorf("is the unspecified address, which no client can connect to")
		}
		if a.Zone() != "" {
			return fmt.Errorf("has an IPv6 zone, which other hosts cannot use")
		}
		return nil
	}
	if s == "" || len(s) > 253 {
		return fmt.Errorf("is not a host name (1 to 253 characters)")
	}
	if strings.ContainsAny(s, ":/@ ") {
		return fmt.Errorf("is not a host name: give the host alone, without a scheme, port or path")
	}
	labels := strings.Split(strings.TrimSuffix(s, "."), ".")
	for _, label := range labels {
		if !hostLabelRE.MatchString(label) {
			return fmt.Errorf("is not a host name: label %q must be 1 to 63 letters, digits or inner dashes", label)
		}
	}
	if strings.Trim(labels[len(labels)-1], "0123456789") == "" {
		return fmt.Errorf("is neither an IP address nor a host name (a top-level domain is never all digits)")
	}
	return nil
}

// instanceNetworks evaluates a sandbox block's networks for one instance.
// With for_each every instance evaluates it, so only the first instance's
// names are kept as references (the ranges are the same).
func (l *loader) instanceNetworks(attr *hcl.Attribute, sc scope, addr Address) ([]string, hcl.Diagnostics) {
	before := len(l.cfg.NetworkRefs)
	nets, diags := l.networkList(attr, sc)
	if addr.HasKey {
		// Keep one reference per name and range across instances.
		refs := l.cfg.NetworkRefs[:before]
		for _, r := range l.cfg.NetworkRefs[before:] {
			if !slices.ContainsFunc(refs, func(o NetworkRef) bool { return o.Name == r.Name && o.Range == r.Range }) {
				refs = append(refs, r)
			}
		}
		l.cfg.NetworkRefs = refs
		// The same diagnostic for every key would repeat; dedupe drops them.
	}
	return nets, diags
}
