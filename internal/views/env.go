package views

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"

	"github.com/sandboxer/sandboxer/internal/shellquote"
	"github.com/sandboxer/sandboxer/state"
)

// Env writes the variables in one of the formats of SPEC §6. For github,
// the lines for $GITHUB_ENV go to w and the ::add-mask:: commands to mask,
// so `>> "$GITHUB_ENV"` captures only the variables while the runner still
// sees the masks.
//
// Names are <prefix><SERVICE>_<SUFFIX> (state.EnvName); an empty prefix is
// the default SANDBOXER_.
func Env(w, mask io.Writer, rec *state.Record, prefix, format string) error {
	return EnvVars(w, mask, rec.Env(prefix), format)
}

// EnvVars prints vars (sorted by name) in format, as Env.
func EnvVars(w, mask io.Writer, vars []state.EnvVar, format string) error {
	switch format {
	case "shell":
		for _, v := range vars {
			fmt.Fprintf(w, "export %s=%s\n", v.Name, shellquote.Quote(v.Value))
		}
	case "dotenv":
		for _, v := range vars {
			fmt.Fprintf(w, "%s=%s\n", v.Name, v.Value)
		}
	case "json":
		m := make(map[string]string, len(vars))
		for _, v := range vars {
			m[v.Name] = v.Value
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(m)
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

// ShellExports prints a request's variables (name → value) as POSIX shell
// exports, sorted by name as Env prints a record's.
func ShellExports(w io.Writer, env map[string]string) {
	for _, name := range slices.Sorted(maps.Keys(env)) {
		fmt.Fprintf(w, "export %s=%s\n", name, shellquote.Quote(env[name]))
	}
}
