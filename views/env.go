package views

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/sandboxer/sandboxer/state"
)

// EnvVar is one exported variable; Secret marks values to mask in CI logs.
type EnvVar struct {
	Name   string
	Value  string
	Secret bool
}

// EnvVars lists SANDBOXER_<SERVICE>_{URL,HOST,PORT,USER,PASSWORD,DB} for
// every service of an instance, sorted by name. This is one of the two
// places (with output) where secrets are meant to be printed.
func EnvVars(rec *state.Record) []EnvVar {
	var out []EnvVar
	for svc, c := range rec.Credentials {
		prefix := "SANDBOXER_" + strings.ToUpper(svc) + "_"
		out = append(out,
			EnvVar{prefix + "URL", c.URL(svc), true},
			EnvVar{prefix + "HOST", c.Host, false},
			EnvVar{prefix + "PORT", fmt.Sprint(c.Port), false},
			EnvVar{prefix + "USER", c.User, false},
			EnvVar{prefix + "PASSWORD", c.Password.Reveal(), true},
		)
		if c.Database != "" {
			out = append(out, EnvVar{prefix + "DB", c.Database, false})
		}
		out = append(out, reachVars(prefix, svc, c)...)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// reachVars are the in-network endpoint (SANDBOXER_<SVC>_NETWORK_URL,
// _NETWORK_HOST, _NETWORK_PORT: the container's DNS name and port on its
// user networks) and, with TLS, the CA file (SANDBOXER_<SVC>_CA), each
// only when the instance has it.
func reachVars(prefix, svc string, c state.Credentials) []EnvVar {
	var out []EnvVar
	if c.NetworkHost != "" {
		out = append(out,
			EnvVar{prefix + "NETWORK_URL", c.NetworkURL(svc), true},
			EnvVar{prefix + "NETWORK_HOST", c.NetworkHost, false},
			EnvVar{prefix + "NETWORK_PORT", fmt.Sprint(c.NetworkPort), false},
		)
	}
	if c.CAFile != "" {
		out = append(out, EnvVar{prefix + "CA", c.CAFile, false})
	}
	return out
}

// EnvMap is EnvVars as a flat name → value object.
func EnvMap(rec *state.Record) map[string]string {
	m := map[string]string{}
	for _, v := range EnvVars(rec) {
		m[v.Name] = v.Value
	}
	return m
}

// Env writes the variables in one of the formats of SPEC §6. For github,
// the lines for $GITHUB_ENV go to w and the ::add-mask:: commands to mask,
// so `>> "$GITHUB_ENV"` captures only the variables while the runner still
// sees the masks.
func Env(w, mask io.Writer, rec *state.Record, format string) error {
	vars := EnvVars(rec)
	switch format {
	case "shell":
		for _, v := range vars {
			fmt.Fprintf(w, "export %s=%s\n", v.Name, shellQuote(v.Value))
		}
	case "dotenv":
		for _, v := range vars {
			fmt.Fprintf(w, "%s=%s\n", v.Name, v.Value)
		}
	case "json":
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(EnvMap(rec))
	case "github":
		for _, v := range vars {
			if v.Secret {
				fmt.Fprintf(mask, "::add-mask::%s\n", v.Value)
			}
		}
		for _, v := range vars {
			fmt.Fprintf(w, "%s=%s\n", v.Name, v.Value)
		}
	default:
		return fmt.Errorf("unknown format %q: use shell, dotenv, json or github", format)
	}
	return nil
}

// shellQuote wraps s in single quotes, safe to eval in POSIX shells.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
