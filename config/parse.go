package config

import (
	"bytes"
	"runtime"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// parseChunkSize is about how many bytes of a file one worker parses at a
// time. hcl's lexer appends every token of its input to one slice, and
// growing that slice (about 100 bytes a token) was a fifth of a plan of
// 1,000 sandboxes. In pieces of about 1 KB the lexer's slices stay small
// (13 MB allocated to parse 1,000 sandbox blocks rather than 22 MB; 18 MB
// in pieces of 8 KB), and the pieces of a large file are parsed on every
// core.
const parseChunkSize = 1 << 10

// parseFiles parses every source (names in order) as hclsyntax.ParseConfig
// does, the pieces of all files concurrently. The result for names[i] is
// files[i] and diags[i].
func parseFiles(names []string, sources map[string][]byte) ([]*hcl.File, []hcl.Diagnostics) {
	type job struct {
		file  int
		chunk int
	}
	plans := make([]*chunkedParse, len(names))
	var jobs []job
	for i, name := range names {
		plans[i] = newChunkedParse(sources[name], name, parseChunkSize)
		for c := range plans[i].chunks {
			jobs = append(jobs, job{i, c})
		}
	}
	workers := min(runtime.GOMAXPROCS(0), len(jobs))
	if workers <= 1 {
		var slabs fastSlabs
		for _, j := range jobs {
			plans[j.file].parseChunkSlabs(j.chunk, &slabs)
		}
	} else {
		next := make(chan job)
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				var slabs fastSlabs
				for j := range next {
					plans[j.file].parseChunkSlabs(j.chunk, &slabs)
				}
			})
		}
		for _, j := range jobs {
			next <- j
		}
		close(next)
		wg.Wait()
	}
	files := make([]*hcl.File, len(names))
	diags := make([]hcl.Diagnostics, len(names))
	for i, p := range plans {
		files[i], diags[i] = p.result()
	}
	return files, diags
}

// chunkedParse is one file cut, at lines that hold only the closing brace
// of what looks like a top-level block, into pieces parsed on their own
// and joined into the body hclsyntax.ParseConfig would build for the whole
// file.
//
// The join is exact or not used: every piece must parse without any
// diagnostic, every piece but the last must end with a top-level block
// whose closing brace is that line's, and no argument may be set in two
// pieces. A cut inside anything else (a nested block, a heredoc, a
// comment, brackets) leaves that construct unclosed in the piece before
// it, which hcl reports; then, or on any other doubt, the whole file is
// parsed again in one go, so diagnostics are hcl's own, unchanged.
type chunkedParse struct {
	src    []byte
	name   string
	chunks []chunk
}

type chunk struct {
	start, end int // byte offsets in src
	pos        hcl.Pos
	file       *hcl.File
	diags      hcl.Diagnostics
}

func newChunkedParse(src []byte, name string, size int) *chunkedParse {
	p := &chunkedParse{src: src, name: name}
	start, line := 0, 1
	for start < len(src) {
		end := len(src)
		if from := start + size; from < len(src) {
			if i := bytes.Index(src[from-1:], []byte("\n}\n")); i >= 0 {
				end = from - 1 + i + 3
			}
		}
		p.chunks = append(p.chunks, chunk{start: start, end: end,
			pos: hcl.Pos{Line: line, Column: 1, Byte: start}})
		line += bytes.Count(src[start:end], []byte("\n"))
		start = end
	}
	if len(p.chunks) == 0 { // an empty file
		p.chunks = []chunk{{pos: hcl.InitialPos}}
	}
	return p
}

// parseChunk parses one piece, by fastParseConfig when the piece is in
// its subset. The file it builds is the one hclsyntax would but for Nav,
// which is lazyNav of the same bytes: hclsyntax's cannot be built from
// outside, and it is only asked when a diagnostic is printed. A file of
// one piece is this file as it is.
func (p *chunkedParse) parseChunk(i int) { p.parseChunkSlabs(i, &fastSlabs{}) }

// parseChunkSlabs is parseChunk taking the fast parse's nodes from slabs
// that the pieces one worker parses share, so that a piece's last
// allocations are not mostly unused.
func (p *chunkedParse) parseChunkSlabs(i int, slabs *fastSlabs) {
	c := &p.chunks[i]
	src := p.src[c.start:c.end]
	if body, ok := fastParseSlabs(src, p.name, c.pos, slabs); ok {
		c.file = &hcl.File{Body: body, Bytes: src, Nav: &lazyNav{src: src, name: p.name, start: c.pos}}
		return
	}
	c.file, c.diags = hclsyntax.ParseConfig(src, p.name, c.pos)
}

// result joins the pieces, or parses the whole file when they cannot be
// joined exactly.
func (p *chunkedParse) result() (*hcl.File, hcl.Diagnostics) {
	if len(p.chunks) == 1 {
		return p.chunks[0].file, p.chunks[0].diags
	}
	body, ok := p.join()
	if !ok {
		return hclsyntax.ParseConfig(p.src, p.name, hcl.InitialPos)
	}
	return &hcl.File{Body: body, Bytes: p.src, Nav: &lazyNav{src: p.src, name: p.name, start: hcl.InitialPos}}, nil
}

func (p *chunkedParse) join() (*hclsyntax.Body, bool) {
	attrs := hclsyntax.Attributes{}
	blocks := hclsyntax.Blocks{}
	bodies := make([]*hclsyntax.Body, len(p.chunks))
	for i, c := range p.chunks {
		body, ok := c.file.Body.(*hclsyntax.Body)
		if !ok || len(c.diags) > 0 {
			return nil, false
		}
		bodies[i] = body
		if i < len(p.chunks)-1 {
			n := len(body.Blocks)
			// The piece ends with "\n}\n": that brace must close its
			// last top-level block.
			if n == 0 || body.Blocks[n-1].CloseBraceRange.Start.Byte != c.end-2 {
				return nil, false
			}
		}
		for name, a := range body.Attributes {
			if _, dup := attrs[name]; dup {
				return nil, false // hcl reports the second one
			}
			attrs[name] = a
		}
		blocks = append(blocks, body.Blocks...)
	}
	first, last := bodies[0], bodies[len(bodies)-1]
	return &hclsyntax.Body{
		Attributes: attrs,
		Blocks:     blocks,
		SrcRange:   hcl.RangeBetween(first.SrcRange, last.SrcRange),
		EndRange:   last.EndRange,
	}, true
}

// lazyNav is hcl.File.Nav (the "in block …" context that hcl's own
// diagnostic printer shows) for a file parsed in pieces or by
// fastParseConfig: hclsyntax's navigation cannot be built from outside,
// so the first question parses src (which starts at start in its file)
// once more and asks its navigation.
type lazyNav struct {
	src   []byte
	name  string
	start hcl.Pos
	once  sync.Once
	nav   interface {
		ContextString(offset int) string
		ContextDefRange(offset int) hcl.Range
	}
}

func (n *lazyNav) load() {
	n.once.Do(func() {
		f, _ := hclsyntax.ParseConfig(n.src, n.name, n.start)
		n.nav, _ = f.Nav.(interface {
			ContextString(offset int) string
			ContextDefRange(offset int) hcl.Range
		})
	})
}

// ContextString implements hcled's contextStringer.
func (n *lazyNav) ContextString(offset int) string {
	n.load()
	if n.nav == nil {
		return ""
	}
	return n.nav.ContextString(offset)
}

// ContextDefRange implements hcled's contextDefRanger.
func (n *lazyNav) ContextDefRange(offset int) hcl.Range {
	n.load()
	if n.nav == nil {
		return hcl.Range{}
	}
	return n.nav.ContextDefRange(offset)
}
