package config

import (
	"bytes"
	"fmt"
	"testing"
)

// distinctSandboxes is manySandboxes(n) with a database of its own in
// every block: no two blocks have the same arguments, so each decodes in
// full (sandbox_memo.go answers none of them).
func distinctSandboxes(n int) []byte {
	src := manySandboxes(n)
	for i := range n {
		old := fmt.Appendf(nil, "sandbox \"s%04d\" {\n", i)
		src = bytes.Replace(src, old, fmt.Appendf(old, "  database   = \"db%04d\"\n", i), 1)
	}
	return src
}

func BenchmarkLoadDistinct1000(b *testing.B) { benchLoad(b, distinctSandboxes(1000), 1000) }
