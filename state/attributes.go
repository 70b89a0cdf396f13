package state

import (
	"sort"
	"strconv"
	"strings"

	"github.com/sandboxer/sandboxer/config"
)

// The credential attributes' table lives in config, which decodes the
// references to them (sandbox.NAME.SERVICE.url); these are its names here.
const (
	AttrURL         = config.AttrURL
	AttrHost        = config.AttrHost
	AttrPort        = config.AttrPort
	AttrUser        = config.AttrUser
	AttrPassword    = config.AttrPassword
	AttrDatabase    = config.AttrDatabase
	AttrNetworkURL  = config.AttrNetworkURL
	AttrNetworkHost = config.AttrNetworkHost
	AttrNetworkPort = config.AttrNetworkPort
	AttrCA          = config.AttrCA
)

// DefaultEnvPrefix starts every exported variable unless a prefix is chosen.
const DefaultEnvPrefix = config.DefaultEnvPrefix

// Attribute describes one credential attribute.
type Attribute = config.Attribute

// CredentialAttributes lists every attribute, sorted by Name.
func CredentialAttributes() []Attribute { return config.CredentialAttributes() }

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
