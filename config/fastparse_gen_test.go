package config

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
)

// hclGen writes configurations in and near fastParse's subset, each
// choice taken from its bytes: the byte-level fuzz rarely mutates its
// way into a long valid file, and the ranges of long valid files (deep
// nesting, comments and newlines in every place they may go) are where
// a fast parser would go wrong.
type hclGen struct {
	data []byte
	b    strings.Builder
	n    int // names argument names apart
}

func (g *hclGen) pick(n int) int {
	if len(g.data) == 0 {
		return 0
	}
	c := int(g.data[0]) % n
	g.data = g.data[1:]
	return c
}

func (g *hclGen) one(opts ...string) { g.b.WriteString(opts[g.pick(len(opts))]) }

// junk is, now and then, something outside the subset.
func (g *hclGen) junk() {
	if g.pick(100) == 0 {
		g.one("(", "+", "[0]", ".0", ".*", "\"${x}\"", "é", "\r", "for ", "==", "?", "-", "\\", "}", "\n", ",", "<<EOT\nx\nEOT\n")
	}
}

func (g *hclGen) body(depth int) {
	n := g.pick(5)
	if depth == 0 {
		n = 2 + g.pick(14)
	}
	for range n {
		g.junk()
		switch g.pick(6) {
		case 0:
			g.one("\n", "# c\n", "// c\n", "/* c\n */\n", "  \n")
		case 1, 2, 3:
			g.one("a", "b", "name", "for_each", "x-y", "_z")
			if g.pick(20) != 0 { // else perhaps set twice
				g.n++
				fmt.Fprint(&g.b, g.n)
			}
			g.one(" = ", "=", "\t=\t", " /* c */ = ")
			g.expr(depth)
			g.one("\n", " # c\n", " // c\n", "\n\n", "\n", " /* c */\n", "\n", "")
		default:
			g.one("blk", "sandbox", "p")
			for range g.pick(3) {
				g.one(" \"l\"", " \"\"", " lab", "\"q\\\"\"", " \"a b\"")
			}
			if depth > 3 {
				g.one(" {}\n", " {\n}\n")
				continue
			}
			switch g.pick(4) {
			case 0:
				g.one(" {}", "{}")
			case 1:
				g.one(" { a = ", "{k=")
				g.expr(depth + 1)
				g.one(" }", "}")
			default:
				g.one(" {\n", " { # c\n", "{\n\n")
				g.body(depth + 1)
				g.one("}", "  }")
			}
			g.one("\n", " # c\n", "\n", "\n\n", "\n", "")
		}
	}
}

func (g *hclGen) sep() { g.one("", " ", "\n", " # c\n", "\n  ", " /* c */ ", "\t") }

func (g *hclGen) expr(depth int) {
	g.junk()
	choice := g.pick(7)
	if depth > 4 {
		choice %= 4
	}
	switch choice {
	case 0:
		g.one("0", "12", "3.25", "007", "1.0")
	case 1:
		g.one("true", "false", "null")
	case 2:
		g.one(`""`, `"a"`, `"a\"b"`, `"\n\t\\"`, `"$"`, `"50%"`, `"x y"`, `"\r"`)
	case 3:
		g.one("a", "a.b", "project.p-1.name", "each.value", "x.true")
	case 4:
		g.b.WriteString("[")
		n := g.pick(4)
		for i := range n {
			g.sep()
			g.expr(depth + 1)
			g.sep()
			if i < n-1 || g.pick(2) == 0 {
				g.b.WriteString(",")
			}
		}
		g.sep()
		g.b.WriteString("]")
	default:
		g.b.WriteString("{")
		n := g.pick(4)
		for i := range n {
			g.one("", " ", "\n", "\n  ", " # c\n")
			g.one("k", `"k"`, "k2", "true", "a.b", "1")
			g.one(" = ", ": ", "=")
			g.expr(depth + 1)
			if i < n-1 {
				g.one(",", ", ", "\n", ",\n", " # c\n")
			} else {
				g.one("", ",", "\n", " ")
			}
		}
		g.b.WriteString("}")
	}
}

func generated(data []byte) (string, hcl.Pos) {
	g := &hclGen{data: data}
	start := hcl.InitialPos
	if g.pick(2) == 0 {
		start = hcl.Pos{Line: 1 + g.pick(50), Column: 1 + g.pick(3), Byte: g.pick(200)}
	}
	g.body(0)
	return g.b.String(), start
}

// TestFastParseGenerated holds fastParse to hcl on a few thousand
// generated configurations, of which many must be taken.
func TestFastParseGenerated(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	took, n := 0, 5000
	for range n {
		data := make([]byte, 64+r.IntN(512))
		for i := range data {
			data[i] = byte(r.UintN(256))
		}
		src, start := generated(data)
		if checkFast(t, []byte(src), start) {
			took++
		}
	}
	t.Logf("took %d of %d", took, n)
	if took < n/5 {
		t.Errorf("took only %d of %d generated configurations", took, n)
	}
}

func FuzzFastParseGenerated(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("some bytes to choose with, some bytes to choose with"))
	f.Fuzz(func(t *testing.T, data []byte) {
		src, start := generated(data)
		checkFast(t, []byte(src), start)
	})
}
