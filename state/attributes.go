package state

import (
	"sort"
	"strconv"
	"strings"
)

// The names of a service's credential attributes. This table is their one
// home: outputs call them sandbox.NAME.SERVICE.<Name>, env and request
// JSON call them <PREFIX><SERVICE>_<EnvSuffix>.
const (
	AttrURL      = "url"
	AttrHost     = "host"
	AttrPort     = "port"
	AttrUser     = "user"
	AttrPassword = "password"
	AttrDatabase = "database"
	// The in-network endpoint, when the instance joined user networks, and
	// the CA file, when it speaks TLS (README: Reach).
	AttrNetworkURL  = "network_url"
	AttrNetworkHost = "network_host"
	AttrNetworkPort = "network_port"
	AttrCA          = "ca"
)

// DefaultEnvPrefix starts every exported variable unless a prefix is chosen.
const DefaultEnvPrefix = "SANDBOXER_"

// Attribute describes one credential attribute.
type Attribute struct {
	// Name is the attribute in outputs (sandbox.ci.postgres.url).
	Name string
	// EnvSuffix ends the variable name in env (SANDBOXER_POSTGRES_URL).
	EnvSuffix string
	// Secret values are masked in CI logs and must be sensitive outputs.
	Secret bool
	// Number values are numbers in outputs (ports), strings in env.
	Number bool
}

// CredentialAttributes lists every attribute, sorted by Name. A service
// may lack some of them (redis has no database).
func CredentialAttributes() []Attribute {
	return []Attribute{
		{Name: AttrCA, EnvSuffix: "CA"},
		{Name: AttrDatabase, EnvSuffix: "DB"},
		{Name: AttrHost, EnvSuffix: "HOST"},
		{Name: AttrNetworkHost, EnvSuffix: "NETWORK_HOST"},
		{Name: AttrNetworkPort, EnvSuffix: "NETWORK_PORT", Number: true},
		{Name: AttrNetworkURL, EnvSuffix: "NETWORK_URL", Secret: true},
		{Name: AttrPassword, EnvSuffix: "PASSWORD", Secret: true},
		{Name: AttrPort, EnvSuffix: "PORT", Number: true},
		{Name: AttrURL, EnvSuffix: "URL", Secret: true},
		{Name: AttrUser, EnvSuffix: "USER"},
	}
}

// Attributes are the values outputs and env can refer to for one service,
// by attribute name; an attribute the service lacks is absent.
func (c Credentials) Attributes(service string) map[string]string {
	attrs := map[string]string{
		AttrURL:      c.URL(service),
		AttrHost:     c.Host,
		AttrPort:     strconv.Itoa(c.Port),
		AttrUser:     c.User,
		AttrPassword: c.Password.Reveal(),
	}
	if c.Database != "" {
		attrs[AttrDatabase] = c.Database
	}
	if c.NetworkHost != "" {
		attrs[AttrNetworkURL] = c.NetworkURL(service)
		attrs[AttrNetworkHost] = c.NetworkHost
		attrs[AttrNetworkPort] = strconv.Itoa(c.NetworkPort)
	}
	if c.CAFile != "" {
		attrs[AttrCA] = c.CAFile
	}
	return attrs
}

// EnvVar is one exported variable; Secret marks values to mask in CI logs.
type EnvVar struct {
	Name   string
	Value  string
	Secret bool
}

// EnvName is the variable for one attribute of one service:
// <prefix><SERVICE>_<suffix>. An empty prefix means DefaultEnvPrefix.
func EnvName(prefix, service string, a Attribute) string {
	if prefix == "" {
		prefix = DefaultEnvPrefix
	}
	return prefix + strings.ToUpper(service) + "_" + a.EnvSuffix
}

// Env lists every credential attribute of every service of the record as
// variables named by EnvName, sorted by name. The values include secrets:
// only env, output and request results may show them.
func (r *Record) Env(prefix string) []EnvVar {
	var out []EnvVar
	attrs := CredentialAttributes()
	for svc, c := range r.Credentials {
		vals := c.Attributes(svc)
		for _, a := range attrs {
			v, ok := vals[a.Name]
			if !ok {
				continue
			}
			out = append(out, EnvVar{Name: EnvName(prefix, svc, a), Value: v, Secret: a.Secret})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// EnvMap is Env as a flat name → value object (request JSON's "env").
func (r *Record) EnvMap(prefix string) map[string]string {
	vars := r.Env(prefix)
	m := make(map[string]string, len(vars))
	for _, v := range vars {
		m[v.Name] = v.Value
	}
	return m
}
