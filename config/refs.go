package config

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// checkRefs reports references in expr that the scope does not allow or
// that name something undeclared, as Terraform does before evaluating.
func (e *evaluator) checkRefs(expr hcl.Expression, sc scope) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, tr := range expr.Variables() {
		diags = append(diags, e.checkRef(tr, sc)...)
	}
	return diags
}

func (e *evaluator) checkRef(tr hcl.Traversal, sc scope) hcl.Diagnostics {
	rng := tr.SourceRange()
	name, named := refName(tr)
	switch root := tr.RootName(); root {
	case "var":
		if _, ok := e.cfg.Variables[name]; named && !ok {
			return hcl.Diagnostics{errorDiag("Reference to undeclared input variable",
				fmt.Sprintf("An input variable with the name %q has not been declared. This variable can be declared with a variable %q {} block.", name, name), rng)}
		}
	case "local":
		if !sc.locals {
			return hcl.Diagnostics{errorDiag("Invalid reference", "Local values cannot be used here.", rng)}
		}
		if named && !e.localNames[name] {
			return hcl.Diagnostics{errorDiag("Reference to undeclared local value",
				fmt.Sprintf("A local value with the name %q has not been declared.", name), rng)}
		}
	case "project":
		if !sc.projects {
			return hcl.Diagnostics{errorDiag("Invalid reference",
				"Projects cannot be referenced here: they are decoded after variables, locals and the provider.", rng)}
		}
		if _, ok := e.cfg.Projects[name]; named && !ok {
			return hcl.Diagnostics{errorDiag("Reference to undeclared project",
				fmt.Sprintf("A project named %q has not been declared.%s", name, e.declaredProjects()), rng)}
		}
	case "each":
		if sc.each == nil {
			return hcl.Diagnostics{errorDiag(`Reference to "each" in context without for_each`,
				`The "each" object can be used only in sandbox blocks that set for_each, and not in for_each itself.`, rng)}
		}
		if len(tr) > 1 && (!named || (name != "key" && name != "value")) {
			return hcl.Diagnostics{errorDiag(`Invalid "each" attribute`,
				`The "each" object has only the attributes "key" and "value".`, rng)}
		}
	case "sandbox":
		if !sc.sandboxes {
			return hcl.Diagnostics{errorDiag("Invalid reference",
				"Sandbox attributes such as URLs and passwords exist only once a sandbox is provisioned, so sandbox.NAME references can be used only in output blocks.", rng)}
		}
		_, diags := e.cfg.resolveSandboxRef(tr)
		return diags
	default:
		return hcl.Diagnostics{errorDiag("Invalid reference",
			fmt.Sprintf("There is no %q here. References available here start with %s.", root, allowedRoots(sc)), rng)}
	}
	return nil
}

// refName returns the name in the second step of var.NAME, local.NAME and
// the like; ok is false for a bare root or a computed step.
func refName(tr hcl.Traversal) (string, bool) {
	if len(tr) < 2 {
		return "", false
	}
	switch s := tr[1].(type) {
	case hcl.TraverseAttr:
		return s.Name, true
	case hcl.TraverseIndex:
		return stringKey(s.Key)
	}
	return "", false
}

func (e *evaluator) declaredProjects() string {
	if len(e.cfg.Projects) == 0 {
		return " No projects are declared."
	}
	names := make([]string, 0, len(e.cfg.Projects))
	for n := range e.cfg.Projects {
		names = append(names, n)
	}
	return " Declared projects: " + strings.Join(SortedUnique(names), ", ") + "."
}

func allowedRoots(sc scope) string {
	roots := []string{"var."}
	if sc.locals {
		roots = append(roots, "local.")
	}
	if sc.projects {
		roots = append(roots, "project.")
	}
	if sc.each != nil {
		roots = append(roots, "each.")
	}
	if sc.sandboxes {
		roots = append(roots, "sandbox.")
	}
	return strings.Join(roots, ", ")
}
