package config

import (
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// movedSchema and removedSchema are Terraform's refactoring blocks:
//
//	moved   { from = sandbox.a  to = sandbox.b }
//	removed { from = sandbox.c  lifecycle { destroy = false } }
var (
	movedSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "from", Required: true}, {Name: "to", Required: true}}}
	removedSchema = &hcl.BodySchema{
		Attributes: []hcl.AttributeSchema{{Name: "from", Required: true}},
		Blocks:     []hcl.BlockHeaderSchema{{Type: "lifecycle"}},
	}
	removedLifecycleSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{{Name: "destroy", Required: true}}}
)

// Move is a moved block: the state's record at From is the sandbox at To
// from now on. From without a key moves the block's record, or every
// instance of it, each to the same key under To's block; to a To with a
// key it moves the one unkeyed record (a block that gains for_each).
type Move struct {
	From, To           Address
	FromRange, ToRange hcl.Range
	DeclRange          hcl.Range
}

// Removed is a removed block: the sandbox at From (every instance of the
// block when it has no key) leaves the configuration; Destroy says
// whether it is destroyed (true, as a deleted block is) or only
// forgotten, its containers and data left running.
type Removed struct {
	From      Address
	Destroy   bool
	FromRange hcl.Range
	DeclRange hcl.Range
}

// decodeMoved decodes the moved blocks into Config.Moves, after the
// sandboxes: a move's to must be declared and its from must not be.
func (l *loader) decodeMoved(blocks hcl.Blocks) hcl.Diagnostics {
	var diags hcl.Diagnostics
	seenTo := map[Address]hcl.Range{}
	for _, b := range blocks {
		content, d := b.Body.Content(movedSchema)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		from, d1 := refAddress(content.Attributes["from"], "moved")
		to, d2 := refAddress(content.Attributes["to"], "moved")
		diags = append(append(diags, d1...), d2...)
		if d1.HasErrors() || d2.HasErrors() {
			continue
		}
		m := &Move{From: from, To: to, FromRange: content.Attributes["from"].Expr.Range(),
			ToRange: content.Attributes["to"].Expr.Range(), DeclRange: b.DefRange}
		switch {
		case from == to:
			diags = append(diags, movedDiag("Redundant move", fmt.Sprintf("A move from %s to itself changes nothing; remove the block.", from), m.ToRange))
			continue
		case from.HasKey && !to.HasKey && l.cfg.Sandboxes[to.Name] != nil && l.cfg.Sandboxes[to.Name].ForEach:
			diags = append(diags, movedDiag("Invalid move", fmt.Sprintf("%s is one instance and %s a for_each block: move it to one of the block's instances, as %s[\"KEY\"].", from, to, to), m.ToRange))
			continue
		case l.declared(from):
			diags = append(diags, movedDiag("Moved object still declared", fmt.Sprintf("%s is still declared in the configuration. A moved block's from must name what the configuration no longer declares: rename the sandbox block (or for_each key) to %s.", from, to), m.FromRange))
			continue
		case !l.declared(to) && !movedOnFrom(blocks, to):
			diags = append(diags, movedDiag("Move to an undeclared sandbox", fmt.Sprintf("%s is not declared in the configuration: a moved block's to must name a sandbox block (or an instance of one) that it declares.", to), m.ToRange))
			continue
		}
		if prev, ok := seenTo[to]; ok {
			diags = append(diags, movedDiag("Duplicate move", fmt.Sprintf("Another moved block, at %s, already moves a sandbox to %s.", prev, to), m.ToRange))
			continue
		}
		seenTo[to] = m.ToRange
		l.cfg.Moves = append(l.cfg.Moves, m)
	}
	return diags
}

// movedOnFrom: another moved block moves to on (a chain, a → b → c, in
// which b is declared no more).
func movedOnFrom(blocks hcl.Blocks, to Address) bool {
	for _, b := range blocks {
		attrs, _ := b.Body.JustAttributes()
		if attr, ok := attrs["from"]; ok {
			if a, d := refAddress(attr, "moved"); !d.HasErrors() && a == to {
				return true
			}
		}
	}
	return false
}

// decodeRemoved decodes the removed blocks into Config.Removes.
func (l *loader) decodeRemoved(blocks hcl.Blocks) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, b := range blocks {
		content, d := b.Body.Content(removedSchema)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		from, d1 := refAddress(content.Attributes["from"], "removed")
		diags = append(diags, d1...)
		if d1.HasErrors() {
			continue
		}
		r := &Removed{From: from, Destroy: true, FromRange: content.Attributes["from"].Expr.Range(), DeclRange: b.DefRange}
		if l.declared(from) {
			diags = append(diags, movedDiag("Removed object still declared", fmt.Sprintf("%s is still declared in the configuration. Remove its sandbox block (or for_each key) as well, or drop the removed block.", from), r.FromRange))
			continue
		}
		for i, lc := range content.Blocks {
			if i > 0 {
				diags = append(diags, movedDiag("Duplicate lifecycle block", "A removed block takes one lifecycle block.", lc.DefRange))
				continue
			}
			lcc, d := lc.Body.Content(removedLifecycleSchema)
			diags = append(diags, d...)
			if d.HasErrors() {
				continue
			}
			attr := lcc.Attributes["destroy"]
			v, d := attr.Expr.Value(nil)
			diags = append(diags, d...)
			if d.HasErrors() {
				continue
			}
			if v.IsNull() || v.Type() != cty.Bool {
				diags = append(diags, movedDiag("Invalid destroy", "lifecycle.destroy must be true or false.", attr.Expr.Range()))
				continue
			}
			r.Destroy = v.True()
		}
		l.cfg.Removes = append(l.cfg.Removes, r)
	}
	return diags
}

// declared reports whether the configuration declares a: the block, for
// an address without a key; the instance (or, for an on-demand block, a
// keyed instance of it) for one with a key.
func (l *loader) declared(a Address) bool {
	sb, ok := l.cfg.Sandboxes[a.Name]
	if !ok {
		return false
	}
	if !a.HasKey {
		return true
	}
	if sb.OnDemand {
		return true
	}
	_, ok = l.cfg.Instance(a)
	return ok
}

// refAddress reads a reference such as sandbox.a or sandbox.a["k"].
func refAddress(attr *hcl.Attribute, block string) (Address, hcl.Diagnostics) {
	bad := func(detail string) (Address, hcl.Diagnostics) {
		return Address{}, hcl.Diagnostics{movedDiag("Invalid address", detail, attr.Expr.Range())}
	}
	tr, diags := hcl.AbsTraversalForExpr(attr.Expr)
	if diags.HasErrors() {
		return bad(fmt.Sprintf("A %s block's %s must be a sandbox address, as sandbox.NAME or sandbox.NAME[\"KEY\"].", block, attr.Name))
	}
	if tr.RootName() != "sandbox" || len(tr) < 2 || len(tr) > 3 {
		return bad(fmt.Sprintf("A %s block's %s must be a sandbox address, as sandbox.NAME or sandbox.NAME[\"KEY\"].", block, attr.Name))
	}
	name, ok := tr[1].(hcl.TraverseAttr)
	if !ok {
		return bad("Expected sandbox.NAME.")
	}
	a := Address{Name: name.Name}
	if len(tr) == 3 {
		idx, ok := tr[2].(hcl.TraverseIndex)
		if !ok || idx.Key.Type() != cty.String || idx.Key.IsNull() || idx.Key.AsString() == "" {
			return bad("A sandbox instance's key is a non-empty string, as in sandbox.NAME[\"KEY\"].")
		}
		a.Key, a.HasKey = idx.Key.AsString(), true
	}
	return a, nil
}

func movedDiag(summary, detail string, rng hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{Severity: hcl.DiagError, Summary: summary, Detail: detail, Subject: rng.Ptr()}
}
