package config

import (
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// decodeLocals decodes every locals block and evaluates the values in
// dependency order. A local in a reference cycle is reported once per
// cycle and left unknown, so what depends on it reports nothing further.
func (l *loader) decodeLocals(blocks hcl.Blocks) hcl.Diagnostics {
	var diags hcl.Diagnostics
	attrs := map[string]*hcl.Attribute{}
	var order []string // declaration order, for deterministic reports
	for _, b := range blocks {
		as, more := b.Body.JustAttributes()
		diags = append(diags, more...)
		for _, a := range sortedAttributes(as) {
			if prev, ok := attrs[a.Name]; ok {
				diags = append(diags, errorDiag("Duplicate local value definition",
					fmt.Sprintf("A local value named %q was already defined at %s. Local value names must be unique within a configuration.", a.Name, prev.Range),
					a.NameRange))
				continue
			}
			attrs[a.Name] = a
			order = append(order, a.Name)
			l.ev.localNames[a.Name] = true
		}
	}

	deps := make(map[string][]string, len(attrs))
	for name, a := range attrs {
		for _, tr := range a.Expr.Variables() {
			if ref, ok := refName(tr); ok && tr.RootName() == "local" && attrs[ref] != nil {
				deps[name] = append(deps[name], ref)
			}
		}
	}

	sorted, cycles := topoSort(order, deps)
	for _, cycle := range cycles {
		for _, name := range cycle {
			l.cfg.Locals[name] = cty.DynamicVal
		}
		path := make([]string, 0, len(cycle)+1)
		for _, name := range append(cycle, cycle[0]) {
			path = append(path, "local."+name)
		}
		diags = append(diags, errorDiag("Cycle in local values",
			fmt.Sprintf("Local values refer to each other in a cycle: %s. Break the cycle by removing one of the references.", strings.Join(path, " → ")),
			attrs[cycle[0]].NameRange))
	}
	for _, name := range sorted {
		if l.ev.ctx.Err() != nil {
			return diags
		}
		if _, inCycle := l.cfg.Locals[name]; inCycle {
			continue
		}
		v, more := l.ev.eval(attrs[name].Expr, scope{locals: true})
		diags = append(diags, more...)
		v, _ = v.UnmarkDeep()
		// Function results are metered as they are built; this catches
		// growth without functions ("${local.a}${local.a}", nested for
		// expressions) before the next local doubles it again.
		if what := measure(v).over(); what != "" {
			diags = append(diags, errorDiag("Value too large",
				fmt.Sprintf("local.%s would hold %s; configurations are limited so that evaluating them cannot exhaust memory.", name, what),
				attrs[name].Expr.Range()))
			v = cty.DynamicVal
		}
		l.cfg.Locals[name] = v
	}
	return diags
}

// topoSort orders names so that each comes after its dependencies and
// returns the cycles it found, each starting at the name it reached first.
func topoSort(names []string, deps map[string][]string) (sorted []string, cycles [][]string) {
	const (
		unvisited = iota
		visiting
		done
	)
	state := make(map[string]int, len(names))
	var stack []string
	var visit func(n string)
	visit = func(n string) {
		state[n] = visiting
		stack = append(stack, n)
		for _, dep := range deps[n] {
			switch state[dep] {
			case unvisited:
				visit(dep)
			case visiting:
				i := len(stack) - 1
				for stack[i] != dep {
					i--
				}
				cycles = append(cycles, append([]string(nil), stack[i:]...))
			}
		}
		stack = stack[:len(stack)-1]
		state[n] = done
		sorted = append(sorted, n)
	}
	for _, n := range names {
		if state[n] == unvisited {
			visit(n)
		}
	}
	return sorted, cycles
}

// sortedAttributes returns attributes in source order.
func sortedAttributes(attrs hcl.Attributes) []*hcl.Attribute {
	out := make([]*hcl.Attribute, 0, len(attrs))
	for _, a := range attrs {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Range, out[j].Range
		if a.Filename != b.Filename {
			return a.Filename < b.Filename
		}
		return a.Start.Byte < b.Start.Byte
	})
	return out
}
