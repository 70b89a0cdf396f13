package config

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// fastParseConfig parses the plain subset of HCL that configurations are
// mostly written in into the body hclsyntax.ParseConfig(src, filename,
// start) builds, in about a fifth of its time and a seventh of its memory
// (BenchmarkFastParse1000 against BenchmarkParse1000): hcl's scanner and
// token slices were nearly half of a plan of 5,000 sandboxes.
//
// The rule: the body is identical to hclsyntax's, down to every range
// and every nil-versus-empty slice, or ok is false and the caller parses
// with hclsyntax. It never reports anything: an input it is unsure of is
// not its to diagnose, so it stops at the first byte or construct outside
// the subset and hcl gives its own diagnostics, unchanged. The subset is
// ASCII without carriage returns or control characters but tabs; blank
// lines, spaces, #, // and /* */ comments; blocks with quoted or bare
// labels, one-line blocks of one argument; arguments whose values are
// numbers without exponents, true, false, null, quoted strings without
// template sequences or \u escapes, traversals of attributes (a.b.c),
// and tuples and objects of those. Everything else (operators, function
// calls, indexes, splats, templates, heredocs, for expressions,
// parentheses, a repeated argument) stops it.
//
// The functions below follow hclsyntax's parser.go function for
// function, so that each can be checked against the one it copies; the
// differential tests and FuzzFastParse compare the two on every input.
func fastParseConfig(src []byte, filename string, start hcl.Pos) (*hclsyntax.Body, bool) {
	return fastParseSlabs(src, filename, start, &fastSlabs{})
}

// fastParseSlabs is fastParseConfig taking its nodes from slabs, which
// the pieces one worker parses share.
func fastParseSlabs(src []byte, filename string, start hcl.Pos, slabs *fastSlabs) (*hclsyntax.Body, bool) {
	if !fastPlausible(src) { // which checks every byte
		return nil, false
	}
	return fastParseChecked(src, filename, start, slabs)
}

// fastParse is fastParseConfig without the quick look first: the tests
// hold it to hcl on inputs the look would turn away.
func fastParse(src []byte, filename string, start hcl.Pos) (body *hclsyntax.Body, ok bool) {
	for _, b := range src {
		if !fastByteOK(b) {
			return nil, false
		}
	}
	return fastParseChecked(src, filename, start, &fastSlabs{})
}

// fastParseChecked is fastParse of a src whose bytes are all fastByteOK.
func fastParseChecked(src []byte, filename string, start hcl.Pos, slabs *fastSlabs) (body *hclsyntax.Body, ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, stop := r.(fastStop); !stop {
				panic(r)
			}
			body, ok = nil, false
		}
	}()
	p := &fastParser{
		fastLexer: fastLexer{src: src, str: string(src), filename: filename, base: start.Byte},
		cur:       fastCursor{off: 0, line: start.Line, lineStart: 1 - start.Column},
		fastSlabs: slabs,
	}
	// At the start of the file hcl's "previous token" is the next one.
	p.peek(true)
	body, _ = p.body(fastEOF, p.rng(p.ahead))
	return body, true
}

// fastParser reads fastLexer's tokens as hclsyntax's parser reads its
// peeker's: peek and read say whether newlines count. The end of the
// peeker's PrevRange, the last token read, is cur.
type fastParser struct {
	fastLexer
	cur fastCursor
	*fastSlabs

	// The last peek, which the next read takes if it would scan the same
	// token in its mode (aheadFits).
	ahead   fastTok
	aheadNL bool
	aheadOK bool
}

// aheadFits says whether the last peek is the token a scan in mode nl
// would return: a token scanned with newlines that is no newline is the
// same without them, and one scanned without them is the same with them
// when no newline was skipped before it.
func (p *fastParser) aheadFits(nl bool) bool {
	if p.aheadNL == nl {
		return true
	}
	if nl {
		return !p.ahead.crossedNL
	}
	return p.ahead.kind != fastNewline
}

// peek returns the next token's kind; the token is p.ahead. Most peeks
// want only the kind, and a token is too big to copy on each.
func (p *fastParser) peek(nl bool) fastKind {
	if p.aheadOK && p.aheadNL == nl { // the common case, inlined
		return p.ahead.kind
	}
	return p.peekScan(nl)
}

func (p *fastParser) peekScan(nl bool) fastKind {
	if !p.aheadOK || !p.aheadFits(nl) {
		p.scan(p.cur, nl, &p.ahead)
		p.aheadNL, p.aheadOK = nl, true
	}
	return p.ahead.kind
}

func (p *fastParser) read(nl bool) fastTok {
	p.peek(nl)
	p.cur, p.aheadOK = p.ahead.after(), false
	return p.ahead
}

func (p *fastParser) text(t fastTok) string { return p.str[t.start:t.end] }

// body is hclsyntax's ParseBody: items up to the end token (EOF at the
// top, "}" in a block), whose range it returns too.
func (p *fastParser) body(end fastKind, startRange hcl.Range) (*hclsyntax.Body, hcl.Range) {
	attrs := hclsyntax.Attributes{}
	blocks := hclsyntax.Blocks{}
	for {
		switch p.peek(true) {
		case end:
			r := p.rng(p.read(true))
			b := p.bodies.next()
			*b = hclsyntax.Body{
				Attributes: attrs,
				Blocks:     blocks,
				SrcRange:   hcl.RangeBetween(startRange, r),
				EndRange:   hcl.Range{Filename: r.Filename, Start: r.End, End: r.End},
			}
			return b, r
		case fastNewline:
			p.read(true)
		case fastIdent:
			ident := p.read(true)
			switch p.peek(true) {
			case fastEqual:
				a := p.attribute(ident, false)
				if _, dup := attrs[a.Name]; dup {
					fastFail() // hcl reports it
				}
				attrs[a.Name] = a
			case fastString, fastOBrace, fastIdent:
				blocks = append(blocks, p.block(ident))
			default:
				fastFail()
			}
		default:
			fastFail()
		}
	}
}

// attribute is finishParsingBodyAttribute: "=" is next.
func (p *fastParser) attribute(ident fastTok, singleLine bool) *hclsyntax.Attribute {
	eq := p.read(true)
	expr := p.expression(true)
	end := p.pos(p.cur.line, p.cur.lineStart, p.cur.off) // of the expression's last token
	if !singleLine {
		switch p.peek(true) {
		case fastNewline:
			p.read(true)
		case fastEOF:
		default:
			fastFail()
		}
	}
	nameRange := p.rng(ident)
	a := p.attrs.next()
	*a = hclsyntax.Attribute{
		Name:        p.text(ident),
		Expr:        expr,
		SrcRange:    hcl.Range{Filename: p.filename, Start: nameRange.Start, End: end},
		NameRange:   nameRange,
		EqualsRange: p.rng(eq),
	}
	return a
}

// block is finishParsingBodyBlock: a label or "{" is next.
func (p *fastParser) block(ident fastTok) *hclsyntax.Block {
	n := p.blocks.next()
	var labels []string
	var labelRanges []hcl.Range
	var open fastTok
labels:
	for {
		switch p.peek(true) {
		case fastOBrace:
			open = p.read(true)
			break labels
		case fastString, fastIdent:
			t := p.read(true)
			if labels == nil {
				labels, labelRanges = n.label[:0], n.labelRange[:0]
			}
			if t.kind == fastString {
				labels = append(labels, p.strVal(t))
			} else {
				labels = append(labels, p.text(t))
			}
			labelRanges = append(labelRanges, p.rng(t))
		default:
			fastFail()
		}
	}
	var body *hclsyntax.Body
	var closeRange hcl.Range
	switch p.peek(true) {
	case fastNewline, fastEOF, fastCBrace:
		body, closeRange = p.body(fastCBrace, p.rng(open))
	default:
		body = p.singleAttrBody()
		if p.peek(true) != fastCBrace {
			fastFail()
		}
		closeRange = p.rng(p.read(true))
	}
	switch p.peek(true) {
	case fastNewline, fastEOF:
		p.read(true)
	default:
		fastFail()
	}
	n.block = hclsyntax.Block{
		Type:            p.text(ident),
		Labels:          labels,
		Body:            body,
		TypeRange:       p.rng(ident),
		LabelRanges:     labelRanges,
		OpenBraceRange:  p.rng(open),
		CloseBraceRange: closeRange,
	}
	return &n.block
}

// singleAttrBody is parseSingleAttrBody: `name { a = 1 }`.
func (p *fastParser) singleAttrBody() *hclsyntax.Body {
	ident := p.read(true)
	if ident.kind != fastIdent || p.peek(true) != fastEqual {
		fastFail()
	}
	a := p.attribute(ident, true)
	b := p.bodies.next()
	*b = hclsyntax.Body{
		Attributes: hclsyntax.Attributes{a.Name: a},
		SrcRange:   a.SrcRange,
		EndRange:   hcl.Range{Filename: a.SrcRange.Filename, Start: a.SrcRange.End, End: a.SrcRange.End},
	}
	return b
}

// expression is ParseExpression for a term and its attribute
// traversals. Whatever follows must be what the caller expects (a
// newline, a comma, a closing bracket, "=" after an object key): an
// operator, "?", an index or a call is none of those, so it stops the
// fast parse where hcl would have built a bigger expression.
func (p *fastParser) expression(nl bool) hclsyntax.Expression {
	var expr hclsyntax.Expression
	switch p.peek(nl) {
	case fastNumber:
		t := p.read(nl)
		v, err := cty.ParseNumberVal(p.text(t))
		if err != nil {
			fastFail()
		}
		expr = &hclsyntax.LiteralValueExpr{Val: v, SrcRange: p.rng(t)}
	case fastIdent:
		t := p.read(nl)
		switch name := p.text(t); name {
		case "true":
			expr = &hclsyntax.LiteralValueExpr{Val: cty.True, SrcRange: p.rng(t)}
		case "false":
			expr = &hclsyntax.LiteralValueExpr{Val: cty.False, SrcRange: p.rng(t)}
		case "null":
			expr = &hclsyntax.LiteralValueExpr{Val: cty.NullVal(cty.DynamicPseudoType), SrcRange: p.rng(t)}
		default:
			n := p.travs.next()
			r := p.rng(t)
			n.steps[0] = hcl.TraverseRoot{Name: name, SrcRange: r}
			n.expr = hclsyntax.ScopeTraversalExpr{Traversal: n.steps[:1], SrcRange: r}
			return p.traversal(nl, &n.expr)
		}
	case fastString:
		t := p.read(nl)
		part := p.inner(t)
		if part.Start.Byte == part.End.Byte {
			// hcl places the part of "" after the closing quote.
			part.Start = part.End
			part.Start.Column++
			part.Start.Byte++
			part.End = part.Start
		}
		n := p.templates.next()
		n.lit = hclsyntax.LiteralValueExpr{Val: cty.StringVal(p.strVal(t)), SrcRange: part}
		n.parts[0] = &n.lit
		n.tmpl = hclsyntax.TemplateExpr{Parts: n.parts[:], SrcRange: p.rng(t)}
		expr = &n.tmpl
	case fastOBrack:
		expr = p.tuple(nl)
	case fastOBrace:
		expr = p.object(nl)
	default:
		fastFail()
	}
	// hcl would make a RelativeTraversalExpr or IndexExpr of these.
	if k := p.peek(nl); k == fastDot || k == fastOBrack {
		fastFail()
	}
	return expr
}

// traversal is parseExpressionTraversals for .name steps.
func (p *fastParser) traversal(nl bool, expr *hclsyntax.ScopeTraversalExpr) hclsyntax.Expression {
	for p.peek(nl) == fastDot {
		dot := p.read(nl)
		if p.peek(nl) != fastIdent { // .0, .*: hcl's legacy index and splat
			fastFail()
		}
		name := p.read(nl)
		rng := hcl.RangeBetween(p.rng(dot), p.rng(name))
		expr.Traversal = append(expr.Traversal, hcl.TraverseAttr{Name: p.text(name), SrcRange: rng})
		expr.SrcRange = hcl.RangeBetween(expr.SrcRange, rng)
	}
	if p.peek(nl) == fastOBrack {
		fastFail()
	}
	return expr
}

// isFor is forKeyword.TokenMatches on the token after an opening bracket.
func (p *fastParser) isFor() bool {
	return p.peek(false) == fastIdent && p.text(p.ahead) == "for"
}

// tuple is parseTupleCons; newlines do not count inside the brackets.
func (p *fastParser) tuple(nl bool) hclsyntax.Expression {
	open := p.read(nl)
	openRange := p.rng(open)
	if p.isFor() {
		fastFail()
	}
	n := p.tuples.next()
	var exprs []hclsyntax.Expression
	var close fastTok
	for {
		if p.peek(false) == fastCBrack {
			close = p.read(false)
			break
		}
		e := p.expression(false)
		if exprs == nil {
			exprs = n.exprs[:0]
		}
		exprs = append(exprs, e)
		next := p.peek(false)
		if next == fastCBrack {
			close = p.read(false)
			break
		}
		if next != fastComma {
			fastFail()
		}
		p.read(false)
	}
	n.tuple = hclsyntax.TupleConsExpr{
		Exprs:     exprs,
		SrcRange:  hcl.RangeBetween(openRange, p.rng(close)),
		OpenRange: openRange,
	}
	return &n.tuple
}

// object is parseObjectCons; newlines separate items inside the braces.
func (p *fastParser) object(nl bool) hclsyntax.Expression {
	open := p.read(nl)
	openRange := p.rng(open)
	if p.isFor() {
		fastFail()
	}
	n := p.objects.next()
	var items []hclsyntax.ObjectConsItem
	var close fastTok
	for {
		next := p.peek(true)
		if next == fastNewline {
			p.read(true)
			continue
		}
		if next == fastCBrace {
			close = p.read(true)
			break
		}
		// A key in parentheses (ForceNonLiteral) starts with "(", which
		// the lexer does not take.
		key := p.keys.next()
		*key = hclsyntax.ObjectConsKeyExpr{Wrapped: p.expression(true)}
		if k := p.peek(true); k != fastEqual && k != fastColon {
			fastFail()
		}
		p.read(true)
		value := p.expression(true)
		if items == nil {
			items = n.items[:0]
		}
		items = append(items, hclsyntax.ObjectConsItem{KeyExpr: key, ValueExpr: value})
		next = p.peek(true)
		if next == fastCBrace {
			close = p.read(true)
			break
		}
		if next != fastComma && next != fastNewline {
			fastFail()
		}
		p.read(true)
	}
	n.object = hclsyntax.ObjectConsExpr{
		Items:     items,
		SrcRange:  hcl.RangeBetween(openRange, p.rng(close)),
		OpenRange: openRange,
	}
	return &n.object
}
