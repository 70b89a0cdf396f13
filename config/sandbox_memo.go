package config

import (
	"encoding/binary"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// A generated configuration repeats a few sandbox blocks under many
// names: 5,000 blocks that differ only in their label and position, over
// a few dozen distinct bodies. Decoding one such body is pure once the
// evaluator has settled (its arguments are literals and a project
// reference, which read nothing but the settled projects), so every block
// with the same arguments decodes to the same sandbox and instance but for
// the name and the declaration range. sandboxMemo keeps, per decode of
// sandboxes, the first such result that came with no diagnostics (a
// diagnostic holds ranges, which differ from block to block) and hands out
// copies of it; the instances then share their read-only slices, maps and
// seed, as the instances of one for_each block already do.

// sandboxMemo maps a literal block's memoKey to what it decoded to. It is
// safe for the workers of predecodeSandboxes.
type sandboxMemo struct {
	// lookups and hits count whole-block lookups: a configuration whose
	// blocks are all unlike (keys built and stored for nothing, a tenth
	// of decoding 5,000 of them) stops looking once that is clear.
	lookups, hits atomic.Int64

	mu sync.Mutex
	m  map[string]memoEntry
	// provision holds, by setsKey, an instance's provision set: blocks
	// whose arguments differ often still share a project and extensions.
	provision map[string]FeatureSet
}

// memoEntry is a memoised block's sandbox and its one instance (rather
// than a decodedSandbox: the map holds every block of a configuration
// with no two alike, and its slots are a third the size).
type memoEntry struct {
	sb   *Sandbox
	inst *Instance
}

func newSandboxMemo() *sandboxMemo {
	return &sandboxMemo{m: map[string]memoEntry{}, provision: map[string]FeatureSet{}}
}

// maxMemoArgs bounds the arguments of a memoised block (the sandbox
// schema has 13), so the names sort in a fixed array.
const maxMemoArgs = 16

// decodeSandboxBlockMemo is decodeSandboxBlock, answered from memo when a
// block with the same arguments decoded cleanly before. memo nil decodes.
// literal says literalSandboxBlock(b) is known to hold.
func (l *loader) decodeSandboxBlockMemo(b *hcl.Block, memo *sandboxMemo, literal bool) (*Sandbox, []*Instance, hcl.Diagnostics) {
	if memo != nil && !memo.worthLooking() {
		return l.decodeSandboxBlock(b, memo)
	}
	var buf [512]byte
	key, ok := l.memoKey(b, buf[:0], memo, literal)
	if !ok {
		return l.decodeSandboxBlock(b, memo)
	}
	memo.lookups.Add(1)
	memo.mu.Lock()
	d, hit := memo.m[string(key)]
	memo.mu.Unlock()
	if hit {
		memo.hits.Add(1)
		return renamed(d, b)
	}
	sb, insts, diags := l.decodeSandboxBlock(b, memo)
	if len(diags) == 0 && len(insts) == 1 && l.ev.ctx.Err() == nil {
		memo.mu.Lock()
		memo.m[string(key)] = memoEntry{sb: sb, inst: insts[0]}
		memo.mu.Unlock()
	}
	return sb, insts, diags
}

// memoTrial is how many whole-block lookups decide whether the memo is
// worth keeping up; it is, while at least a quarter of them hit.
const memoTrial = 512

func (m *sandboxMemo) worthLooking() bool {
	n := m.lookups.Load()
	return n < memoTrial || m.hits.Load()*4 >= n
}

// renamed is d as block b's own: what decodeSandboxBlock sets from the
// label and the declaration range, and nothing else, differs. The sandbox,
// the instance and the list holding it are one allocation.
func renamed(d memoEntry, b *hcl.Block) (*Sandbox, []*Instance, hcl.Diagnostics) {
	out := &struct {
		sb    Sandbox
		inst  Instance
		insts [1]*Instance
	}{sb: *d.sb, inst: *d.inst}
	out.sb.Name, out.sb.DeclRange = b.Labels[0], b.DefRange
	out.inst.Addr, out.inst.DeclRange = Address{Name: out.sb.Name}, b.DefRange
	out.insts[0] = &out.inst
	return &out.sb, out.insts[:], nil
}

// memoKey appends to buf the arguments of a block that may be memoised,
// each name with its expression's source text, in name order: two blocks
// with equal keys hold the same literals and the same project reference.
// ok is false for a block that may not: one with nested blocks (a pool
// decodes with the block's name in its messages), one that is not a
// literal block, one reading seed files (their digest is taken as read),
// or while evaluation is stopping (decodeSandboxBlock then returns early).
func (l *loader) memoKey(b *hcl.Block, buf []byte, memo *sandboxMemo, literal bool) ([]byte, bool) {
	if memo == nil || !l.ev.settled || l.ev.ctx.Err() != nil {
		return nil, false
	}
	body, ok := b.Body.(*hclsyntax.Body)
	if !ok || len(body.Blocks) > 0 || len(body.Attributes) > maxMemoArgs || !literal && !literalSandboxBlock(b) {
		return nil, false
	}
	if _, seeds := body.Attributes["seed_sql"]; seeds {
		return nil, false
	}
	var arr [maxMemoArgs]string
	names := arr[:0]
	for name := range body.Attributes {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		a := body.Attributes[name]
		text, ok := l.sourceText(a.Expr.Range())
		// The argument's name where its range says it is: the ranges
		// index the bytes the key is read from.
		if nameText, nok := l.sourceText(a.NameRange); !ok || !nok || string(nameText) != name {
			return nil, false
		}
		buf = binary.AppendUvarint(buf, uint64(len(name)))
		buf = append(buf, name...)
		buf = binary.AppendUvarint(buf, uint64(len(text)))
		buf = append(buf, text...)
	}
	return buf, true
}

// sourceText is the text a range covers in its file's source.
func (l *loader) sourceText(r hcl.Range) ([]byte, bool) {
	src, ok := l.cfg.Sources[r.Filename]
	if !ok || r.Start.Byte < 0 || r.Start.Byte > r.End.Byte || r.End.Byte > len(src) {
		return nil, false
	}
	return src[r.Start.Byte:r.End.Byte], true
}

// setsKey appends to buf what an instance's provision set follows from:
// its project (and whether its opted set is checked) and the source text
// of its extensions argument (nil: none). ok is false without a memo or a
// project, or when the argument is not a literal (its value could depend
// on each).
func (l *loader) setsKey(buf []byte, memo *sandboxMemo, p *Project, checkOptIn bool, ext *hcl.Attribute) ([]byte, bool) {
	if memo == nil || p == nil || !l.ev.settled {
		return nil, false
	}
	buf = binary.AppendUvarint(buf, uint64(len(p.Name)))
	buf = append(buf, p.Name...)
	if checkOptIn {
		buf = append(buf, 1)
	} else {
		buf = append(buf, 0)
	}
	if ext == nil {
		return append(buf, 0), true
	}
	text, ok := l.sourceText(ext.Expr.Range())
	if !ok || !isLiteral(ext.Expr) {
		return nil, false
	}
	buf = append(buf, 1)
	return append(buf, text...), true
}

// sets is the provision set stored under key; hit is false when there is
// none or ok is false (the key is not one).
func (m *sandboxMemo) sets(key []byte, ok bool) (provision FeatureSet, hit bool) {
	if !ok {
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	provision, hit = m.provision[string(key)]
	return provision, hit
}

// storeSets keeps provision under key when ok: the extensions decoded
// with no diagnostics (theirs hold the block's ranges and name).
func (m *sandboxMemo) storeSets(key []byte, ok bool, provision FeatureSet) {
	if !ok {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.provision[string(key)] = provision
}
