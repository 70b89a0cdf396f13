package config

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/zclconf/go-cty/cty"
)

var variableBlockSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "type"},
		{Name: "default"},
		{Name: "description"},
		{Name: "sensitive"},
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "validation"}},
}

var validationBlockSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "condition", Required: true},
		{Name: "error_message", Required: true},
	},
}

// variableDecl is a decoded variable block plus what value assignment
// needs; the public part is Variable.
type variableDecl struct {
	v           *Variable
	typ         cty.Type
	defaults    *typeexpr.Defaults
	hasDefault  bool
	validations []*validation
	// set is true once any source gave a value (default included).
	set bool
	// failed is true when a value was given but was unusable.
	failed bool
	// typeFailed is true when the type constraint is invalid (reported):
	// no value can then be checked against it.
	typeFailed bool
	// source is the range of the attribute the final value came from;
	// nil for --var and environment values, which have no source text.
	source *hcl.Range
	origin string // "default", "a --var-file", "--var", the environment
}

type validation struct {
	condition    hcl.Expression
	errorMessage hcl.Expression
}

// decodeVariables decodes every variable block, then assigns values.
func (l *loader) decodeVariables(blocks hcl.Blocks) hcl.Diagnostics {
	var diags hcl.Diagnostics
	var decls []*variableDecl
	byName := map[string]*variableDecl{}
	for _, b := range blocks {
		d, more := decodeVariableBlock(b, l.ev.meter)
		diags = append(diags, more...)
		if d == nil {
			continue
		}
		if prev, ok := byName[d.v.Name]; ok {
			diags = append(diags, duplicateDiag("variable", d.v.Name, prev.v.DeclRange, d.v.DeclRange))
			continue
		}
		byName[d.v.Name] = d
		decls = append(decls, d)
		l.cfg.Variables[d.v.Name] = d.v
	}
	diags = append(diags, l.assignVariables(byName)...)
	for _, d := range decls {
		diags = append(diags, l.finishVariable(d)...)
	}
	return diags
}

func decodeVariableBlock(b *hcl.Block, m *meter) (*variableDecl, hcl.Diagnostics) {
	name := b.Labels[0]
	if !validName(name) {
		return nil, hcl.Diagnostics{invalidNameDiag("variable", name, b.LabelRanges[0])}
	}
	content, diags := b.Body.Content(variableBlockSchema)
	d := &variableDecl{
		v:   &Variable{Name: name, Value: cty.DynamicVal, DeclRange: b.DefRange},
		typ: cty.DynamicPseudoType,
	}
	if attr, ok := content.Attributes["type"]; ok {
		ty, defaults, more := typeexpr.TypeConstraintWithDefaults(attr.Expr)
		diags = append(diags, more...)
		if more.HasErrors() {
			d.typeFailed = true
		} else {
			d.typ, d.defaults = ty, defaults
		}
	}
	if attr, ok := content.Attributes["description"]; ok {
		v, more := m.valueWithin(attr.Expr, nil)
		diags = append(diags, more...)
		if s, ok, more := typed(v, attr.Expr, cty.String, "description"); ok {
			d.v.Description = s.AsString()
		} else {
			diags = append(diags, more...)
		}
	}
	if attr, ok := content.Attributes["sensitive"]; ok {
		v, more := m.valueWithin(attr.Expr, nil)
		diags = append(diags, more...)
		if b, ok, more := typed(v, attr.Expr, cty.Bool, "sensitive"); ok {
			d.v.Sensitive = b.True()
		} else {
			diags = append(diags, more...)
		}
	}
	if attr, ok := content.Attributes["default"]; ok {
		// Defaults are constants: they may not reference anything.
		v, more := m.valueWithin(attr.Expr, nil)
		diags = append(diags, more...)
		d.hasDefault = true
		if more.HasErrors() {
			d.set, d.failed = true, true
		} else {
			rng := attr.Expr.Range()
			diags = append(diags, d.setValue(v, "default", &rng)...)
		}
	}
	for _, vb := range content.Blocks {
		vc, more := vb.Body.Content(validationBlockSchema)
		diags = append(diags, more...)
		cond, ok1 := vc.Attributes["condition"]
		msg, ok2 := vc.Attributes["error_message"]
		if ok1 && ok2 {
			d.validations = append(d.validations, &validation{condition: cond.Expr, errorMessage: msg.Expr})
		}
	}
	return d, diags
}

// setValue converts v to the variable's type and makes it the value.
// source is where the value is written, when it is written in a file.
func (d *variableDecl) setValue(v cty.Value, origin string, source *hcl.Range) hcl.Diagnostics {
	d.set, d.origin, d.source = true, origin, source
	if d.typeFailed {
		d.failed, d.v.Value = true, cty.DynamicVal
		return nil
	}
	v, _ = v.UnmarkDeep()
	if d.defaults != nil {
		v = d.defaults.Apply(v)
	}
	cv, err := convertValue(v, d.typ)
	if err != nil {
		d.failed = true
		d.v.Value = cty.DynamicVal
		subject := d.v.DeclRange
		if source != nil {
			subject = *source
		}
		return hcl.Diagnostics{errorDiag("Invalid value for input variable",
			fmt.Sprintf("The value for var.%s from %s is not suitable: %s.", d.v.Name, origin, err), subject)}
	}
	d.failed = false
	d.v.Value = cv
	return nil
}
