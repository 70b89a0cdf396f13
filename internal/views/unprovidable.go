package views

import (
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
)

// Unprovidable renders every feature the images cannot provide, sandbox
// by sandbox with the location of its block (from where, when known), then
// once per image what it does provide and how to get the rest.
func Unprovidable(w io.Writer, e *plan.UnprovidableError, where func(addr string) (hcl.Range, bool), c Colorizer) {
	n := e.Count()
	noun := "features"
	if n == 1 {
		noun = "feature"
	}
	fmt.Fprintf(w, "%s%s\n\n", c.Red("Error: "), c.Bold(fmt.Sprintf("The images cannot provide %d requested %s", n, noun)))
	type imageKey struct{ service, image string }
	images := map[imageKey]plan.Shortfall{}
	missing := map[imageKey][]string{} // over every sandbox on the image
	for _, s := range e.Shortfalls {
		addr := s.Addr.String()
		loc := ""
		if where != nil {
			if r, ok := where(addr); ok {
				loc = fmt.Sprintf(" (%s:%d:%d)", r.Filename, r.Start.Line, r.Start.Column)
			}
		}
		fmt.Fprintf(w, "  %s%s: %s image %q does not provide %s\n", addr, loc, s.Service, s.Image, quoted(s.Missing))
		k := imageKey{s.Service, s.Image}
		missing[k] = append(missing[k], s.Missing...)
		if prev, ok := images[k]; ok {
			for f, why := range prev.Why {
				if s.Why == nil {
					s.Why = map[string]string{}
				}
				s.Why[f] = why
			}
		}
		images[k] = s
	}
	keys := make([]imageKey, 0, len(images))
	for k := range images {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].service != keys[j].service {
			return keys[i].service < keys[j].service
		}
		return keys[i].image < keys[j].image
	})
	fmt.Fprintln(w)
	for _, k := range keys {
		s := images[k]
		provides := "nothing on the allowlist"
		if len(s.Provided) > 0 {
			provides = strings.Join(s.Provided, ", ")
		}
		fmt.Fprintf(w, "%s image %q provides: %s\n", k.service, k.image, provides)
		whys := make([]string, 0, len(s.Why))
		for f := range s.Why {
			whys = append(whys, f)
		}
		sort.Strings(whys)
		for _, f := range whys {
			fmt.Fprintf(w, "  %s: %s\n", f, s.Why[f])
		}
		if s.Hint != "" {
			fmt.Fprintf(w, "  To get the missing ones, %s.\n", s.Hint)
		}
		if with := officialImagesWith(k.service, missing[k]); with != "" {
			fmt.Fprintf(w, "  Official images that have them: %s.\n", with)
		}
	}
	fmt.Fprintln(w, "\nNothing was created and the state is unchanged.")
}

func quoted(items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = fmt.Sprintf("%q", s)
	}
	return strings.Join(q, ", ")
}

// officialImagesWith names, for the features a configured image lacks,
// the default images that have them ("pgvector/pgvector:pg17 (vector)"),
// the ones the plan would pick with no image configured.
func officialImagesWith(service string, features []string) string {
	by := map[string][]string{}
	var refs []string
	for _, f := range features {
		// A default image is chosen by name, not by API generation: it
		// is named only for a feature asked for without one.
		if config.FeatureName(f) != f {
			continue
		}
		ref, ok := config.DefaultImageWith(service, f)
		if !ok || slices.Contains(by[ref], f) {
			continue
		}
		if by[ref] == nil {
			refs = append(refs, ref)
		}
		by[ref] = append(by[ref], f)
	}
	parts := make([]string, len(refs))
	for i, ref := range refs {
		slices.Sort(by[ref])
		parts[i] = fmt.Sprintf("%s (%s)", ref, strings.Join(by[ref], ", "))
	}
	slices.Sort(parts)
	return strings.Join(parts, "; ")
}
