package config

import (
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

var outputBlockSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "value", Required: true},
		{Name: "sensitive"},
		{Name: "description"},
	},
}

// decodeOutputs decodes every output block into Config.Outputs, sorted by
// name. An output's value depends on provisioned sandboxes, so here it is
// only checked: its references must resolve, and it is evaluated once with
// every sandbox attribute unknown to catch type errors before apply.
func (l *loader) decodeOutputs(blocks hcl.Blocks) hcl.Diagnostics {
	var diags hcl.Diagnostics
	seen := map[string]*Output{}
	if len(blocks) == 0 {
		return nil // the sandbox object below is as large as the configuration
	}
	static := outputScope(l.cfg.sandboxObject(nil))
	for _, b := range blocks {
		name := b.Labels[0]
		if !validName(name) {
			diags = append(diags, invalidNameDiag("output", name, b.LabelRanges[0]))
			continue
		}
		if prev, ok := seen[name]; ok {
			diags = append(diags, duplicateDiag("output", name, prev.DeclRange, b.DefRange))
			continue
		}
		o := &Output{Name: name, DeclRange: b.DefRange}
		content, more := b.Body.Content(outputBlockSchema)
		diags = append(diags, more...)
		if attr, ok := content.Attributes["sensitive"]; ok {
			v, more := l.ev.eval(attr.Expr, scope{locals: true})
			diags = append(diags, more...)
			bv, ok, more := typed(v, attr.Expr, cty.Bool, "sensitive")
			diags = append(diags, more...)
			o.Sensitive = ok && bv.True()
		}
		if attr, ok := content.Attributes["value"]; ok {
			o.Expr = attr.Expr
			v, more := l.ev.eval(attr.Expr, static)
			diags = append(diags, more...)
			if !more.HasErrors() {
				diags = append(diags, checkSensitive(o, v)...)
			}
		} else {
			o.Expr = hcl.StaticExpr(cty.NullVal(cty.DynamicPseudoType), b.DefRange)
		}
		if attr, ok := content.Attributes["description"]; ok {
			v, more := l.ev.eval(attr.Expr, scope{locals: true})
			diags = append(diags, more...)
			if s, ok, more := typed(v, attr.Expr, cty.String, "description"); ok {
				o.Description = s.AsString()
			} else {
				diags = append(diags, more...)
			}
		}
		seen[name] = o
		l.cfg.Outputs = append(l.cfg.Outputs, o)
	}
	sort.Slice(l.cfg.Outputs, func(i, j int) bool { return l.cfg.Outputs[i].Name < l.cfg.Outputs[j].Name })
	return diags
}
