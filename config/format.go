package config

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
)

// Format returns the canonical formatting of one file. The source is
// parsed first: hclwrite formats whatever tokens it is given, so without
// the check a file with broken syntax would come back mangled instead of
// refused. On bad syntax it returns nil and the parse diagnostics.
func Format(filename string, src []byte) ([]byte, hcl.Diagnostics) {
	if _, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos); diags.HasErrors() {
		return nil, diags
	}
	return hclwrite.Format(src), nil
}
