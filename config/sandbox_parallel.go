package config

import (
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// minParallelBlocks is how many literal sandbox blocks make decoding them
// on several cores worth starting goroutines for.
const minParallelBlocks = 64

// decodedSandbox is what decodeSandboxBlock returned for one block.
type decodedSandbox struct {
	sb    *Sandbox
	insts []*Instance
	diags hcl.Diagnostics
}

// predecodeSandboxes decodes, on every core, the sandbox blocks whose
// decoding touches nothing shared: every argument is a literal (eval then
// reads only the settled, shared context and never the loop meter) or the
// project reference, and neither for_each nor networks (which record
// references in the Config) is set. It returns each such block's result at
// its index, nil elsewhere; decodeSandboxes then takes the blocks in order
// as before, using a result where there is one, so names, duplicates,
// diagnostics and instances come out exactly as a sequential decode
// makes them. nil when there are too few such blocks.
func (l *loader) predecodeSandboxes(blocks hcl.Blocks, memo *sandboxMemo) []*decodedSandbox {
	workers := runtime.GOMAXPROCS(0)
	if !l.ev.settled || workers < 2 || len(blocks) < minParallelBlocks {
		return nil
	}
	var eligible []int
	for i, b := range blocks {
		if literalSandboxBlock(b) {
			eligible = append(eligible, i)
		}
	}
	if len(eligible) < minParallelBlocks {
		return nil
	}
	// The one write evaluating a literal argument can make: the shared
	// context of blockScope, built on first use.
	l.ev.evalCtx(blockScope(), nil)
	out := make([]*decodedSandbox, len(blocks))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, len(eligible)) {
		wg.Go(func() {
			for {
				j := int(next.Add(1)) - 1
				if j >= len(eligible) || l.ev.ctx.Err() != nil {
					return
				}
				i := eligible[j]
				sb, insts, diags := l.decodeSandboxBlockMemo(blocks[i], memo, true)
				out[i] = &decodedSandbox{sb: sb, insts: insts, diags: diags}
			}
		})
	}
	wg.Wait()
	return out
}

// literalSandboxBlock reports whether a sandbox block's arguments are all
// literals, but for project, and it sets neither for_each nor networks.
func literalSandboxBlock(b *hcl.Block) bool {
	body, ok := b.Body.(*hclsyntax.Body)
	if !ok {
		return false
	}
	for name, attr := range body.Attributes {
		switch name {
		case "project":
		case "for_each", "networks":
			return false
		default:
			if !isLiteral(attr.Expr) {
				return false
			}
		}
	}
	return true
}
