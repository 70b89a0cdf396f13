package views

import (
	"fmt"
	"io"
	"sort"

	"github.com/hashicorp/hcl/v2"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
)

// NoImage renders a plan refused because no single default image provides
// what some sandboxes ask for: each one with the location of its block
// (from where, when known) and the candidates with what each lacks, then
// how to get one image with everything.
func NoImage(w io.Writer, e *plan.NoImageError, where func(addr string) (hcl.Range, bool), c Colorizer) {
	n := len(e.Refusals)
	noun := "sandbox asks"
	if n != 1 {
		noun = "sandboxes ask"
	}
	fmt.Fprintf(w, "%s%s\n\n", c.Red("Error: "), c.Bold(fmt.Sprintf("No single default image provides what %d %s for", n, noun)))
	services := map[string]bool{}
	for _, r := range e.Refusals {
		addr := r.Addr.String()
		loc := ""
		if where != nil {
			if rg, ok := where(addr); ok {
				loc = fmt.Sprintf(" (%s:%d:%d)", rg.Filename, rg.Start.Line, rg.Start.Column)
			}
		}
		fmt.Fprintf(w, "  %s%s: no provider \"docker\" image is configured for %s, and no default %s image has %s\n",
			addr, loc, r.Err.Service, r.Err.Service, quoted(r.Err.Features))
		for _, cand := range r.Err.Candidates {
			fmt.Fprintf(w, "    %s lacks %s\n", cand.Ref, quoted(cand.Lacks))
		}
		services[r.Err.Service] = true
	}
	fmt.Fprintln(w)
	for _, svc := range sortedKeys(services) {
		fmt.Fprintf(w, "To get them, %s.\n", fmt.Sprintf(config.ImageRecipe, svc))
	}
	fmt.Fprintln(w, "\nNothing was created and the state is unchanged.")
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
