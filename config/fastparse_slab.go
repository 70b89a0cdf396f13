package config

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// fastSlab hands out the nodes of one kind that fast parses build from
// a few larger allocations rather than one each: a piece of 1,000 bytes
// builds about a hundred nodes, and allocating them one by one was a
// fourth of the parse. The pieces one worker parses share slabs, and
// their ASTs live together (the configuration's files), so a slab
// outliving one node costs little; what a declined parse took from a slab
// stays there unused until the ASTs beside it go.
type fastSlab[T any] struct {
	free []T
	n    int // the size of the last allocation
}

func (s *fastSlab[T]) next() *T {
	if len(s.free) == 0 {
		// Doubling from 8 to 64: a few pieces waste little, and the
		// unused end of the last allocation stays a few kilobytes.
		s.n = min(max(8, 2*s.n), 64)
		s.free = make([]T, s.n)
	}
	t := &s.free[0]
	s.free = s.free[1:]
	return t
}

// fastBlockNode is a block with room for one label, which is what most
// blocks have.
type fastBlockNode struct {
	block      hclsyntax.Block
	label      [1]string
	labelRange [1]hcl.Range
}

// fastTemplateNode is a quoted string: its template, its one part and
// the slice of it.
type fastTemplateNode struct {
	tmpl  hclsyntax.TemplateExpr
	lit   hclsyntax.LiteralValueExpr
	parts [1]hclsyntax.Expression
}

// fastTraversalNode is a traversal with room for three steps.
type fastTraversalNode struct {
	expr  hclsyntax.ScopeTraversalExpr
	steps [3]hcl.Traverser
}

// fastTupleNode and fastObjectNode have room for one element, the most
// common length.
type fastTupleNode struct {
	tuple hclsyntax.TupleConsExpr
	exprs [1]hclsyntax.Expression
}

type fastObjectNode struct {
	object hclsyntax.ObjectConsExpr
	items  [1]hclsyntax.ObjectConsItem
}

// fastSlabs are one parse's slabs.
type fastSlabs struct {
	attrs     fastSlab[hclsyntax.Attribute]
	bodies    fastSlab[hclsyntax.Body]
	blocks    fastSlab[fastBlockNode]
	templates fastSlab[fastTemplateNode]
	travs     fastSlab[fastTraversalNode]
	tuples    fastSlab[fastTupleNode]
	objects   fastSlab[fastObjectNode]
	keys      fastSlab[hclsyntax.ObjectConsKeyExpr]
}
