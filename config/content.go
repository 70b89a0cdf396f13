package config

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// blockContent is body.Content(schema) for the body of a block as the
// parser built it, without the bookkeeping hclsyntax's Content allocates
// for a later PartialContent (maps of what it hid, a copy of the body):
// a tenth of decoding 5,000 sandbox blocks. It builds the content itself
// only when Content would find nothing to report (every argument and
// block in the schema, each block with its labels, every required
// argument set); otherwise, or for a body of another syntax, it calls
// Content, so diagnostics are hcl's own. The body must not be the remain
// of a PartialContent, whose hidden items this cannot see.
func blockContent(body hcl.Body, schema *hcl.BodySchema) (*hcl.BodyContent, hcl.Diagnostics) {
	b, ok := body.(*hclsyntax.Body)
	if !ok || !fitsSchema(b, schema) {
		return body.Content(schema)
	}
	attrs := make(hcl.Attributes, len(b.Attributes))
	// One allocation for them all; each is what AsHCLAttribute makes.
	each := make([]hcl.Attribute, 0, len(b.Attributes))
	for name, a := range b.Attributes {
		each = append(each, hcl.Attribute{Name: a.Name, Expr: a.Expr, Range: a.SrcRange, NameRange: a.NameRange})
		attrs[name] = &each[len(each)-1]
	}
	var blocks hcl.Blocks
	for _, blk := range b.Blocks {
		blocks = append(blocks, blk.AsHCLBlock())
	}
	return &hcl.BodyContent{Attributes: attrs, Blocks: blocks, MissingItemRange: b.MissingItemRange()}, nil
}

func fitsSchema(b *hclsyntax.Body, schema *hcl.BodySchema) bool {
	for name := range b.Attributes {
		if !schemaHasAttribute(schema, name) {
			return false
		}
	}
	for _, a := range schema.Attributes {
		if _, set := b.Attributes[a.Name]; a.Required && !set {
			return false
		}
	}
	for _, blk := range b.Blocks {
		found := false
		for _, s := range schema.Blocks {
			if s.Type == blk.Type {
				found = len(blk.Labels) == len(s.LabelNames)
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func schemaHasAttribute(schema *hcl.BodySchema, name string) bool {
	for _, a := range schema.Attributes {
		if a.Name == name {
			return true
		}
	}
	return false
}
