package config

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// isLiteral reports whether expr is built from constants alone: literal
// values, strings without interpolation of anything but literals, and
// tuples and objects of those (with bare or literal keys). Such an
// expression references nothing and holds no for, so checking its
// references and its loop work would find nothing; eval skips both, which
// walked every argument of every sandbox block twice. The check allocates
// nothing.
func isLiteral(expr hcl.Expression) bool {
	switch e := expr.(type) {
	case *hclsyntax.LiteralValueExpr:
		return true
	case *hclsyntax.TemplateExpr:
		for _, p := range e.Parts {
			if !isLiteral(p) {
				return false
			}
		}
		return true
	case *hclsyntax.TemplateWrapExpr:
		return isLiteral(e.Wrapped)
	case *hclsyntax.TupleConsExpr:
		for _, x := range e.Exprs {
			if !isLiteral(x) {
				return false
			}
		}
		return true
	case *hclsyntax.ObjectConsExpr:
		for _, it := range e.Items {
			if !isLiteral(it.KeyExpr) || !isLiteral(it.ValueExpr) {
				return false
			}
		}
		return true
	case *hclsyntax.ObjectConsKeyExpr:
		// A bare name is the key itself, not a reference, exactly when
		// hcl's own walk skips it (ObjectConsKeyExpr.walkChildNodes).
		if !e.ForceNonLiteral && hcl.ExprAsKeyword(e.Wrapped) != "" {
			return true
		}
		return isLiteral(e.Wrapped)
	}
	return false
}
