package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
)

// applyMoves returns snap with the configuration's moved blocks carried
// out on a copy of its records (snap itself is not changed), and each
// moved record's new address → old address. Moves run in the order they
// are written, so a chain (a → b, b → c) ends at c.
//
// A move whose from is not recorded is done already when its to is (the
// block stays in the configuration after apply, as Terraform's does), and
// an error when neither is, unless the state is empty: a new environment
// has nothing to move. A move to an address already recorded is an
// error: the two sandboxes would be one. Errors are located diagnostics.
func applyMoves(moves []*config.Move, snap *state.Snapshot) (*state.Snapshot, map[string]string, error) {
	if len(moves) == 0 {
		return snap, nil, nil
	}
	empty := len(snap.Records) == 0
	recs := maps.Clone(snap.Records)
	prev := map[string]string{}
	var diags hcl.Diagnostics
	for _, m := range moves {
		pairs := movePairs(m, recs)
		if len(pairs) == 0 {
			if !empty && !movedAlready(m, recs) {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Move from an unrecorded sandbox",
					Detail:  fmt.Sprintf("No sandbox is recorded at %s, nor at %s where the move would put it. Check the address (`sandboxer state list`), or remove the moved block.", m.From, m.To),
					Subject: m.FromRange.Ptr()})
			}
			continue
		}
		for _, p := range pairs {
			if other, ok := recs[p[1]]; ok {
				diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Move to an address in use",
					Detail:  fmt.Sprintf("%s is already recorded in state (generation %d), so %s cannot move there: the two would be one sandbox. Destroy or `sandboxer state rm` %s first, or move to another address.", p[1], other.Generation, p[0], p[1]),
					Subject: m.ToRange.Ptr()})
				continue
			}
			rec := *recs[p[0]]
			rec.LabelAddress = rec.ResourceAddress()
			rec.Address = p[1]
			delete(recs, p[0])
			recs[p[1]] = &rec
			if orig, ok := prev[p[0]]; ok {
				delete(prev, p[0])
				prev[p[1]] = orig
			} else {
				prev[p[1]] = p[0]
			}
		}
	}
	if diags.HasErrors() {
		return nil, nil, diags
	}
	out := *snap
	out.Records = recs
	return &out, prev, nil
}

// movePairs are the recorded (old, new) addresses a move takes, sorted:
// an instance to an instance; a block's unkeyed record to To, and each
// keyed one to the same key under To's block.
func movePairs(m *config.Move, recs map[string]*state.Record) [][2]string {
	if m.From.HasKey || m.To.HasKey {
		if hasRecord(recs, m.From.String()) {
			return [][2]string{{m.From.String(), m.To.String()}}
		}
		return nil
	}
	var pairs [][2]string
	for addr := range recs {
		a, err := config.ParseAddress(addr)
		if err != nil || a.Name != m.From.Name {
			continue
		}
		to := m.To
		if a.HasKey {
			to = config.Address{Name: m.To.Name, Key: a.Key, HasKey: true}
		}
		pairs = append(pairs, [2]string{addr, to.String()})
	}
	slices.SortFunc(pairs, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
	return pairs
}

// movedAlready: what the move would create is recorded.
func movedAlready(m *config.Move, recs map[string]*state.Record) bool {
	if m.To.HasKey {
		return hasRecord(recs, m.To.String())
	}
	for addr := range recs {
		if a, err := config.ParseAddress(addr); err == nil && a.Name == m.To.Name {
			return true
		}
	}
	return false
}

func hasRecord(recs map[string]*state.Record, addr string) bool {
	_, ok := recs[addr]
	return ok
}

// removedFor is the removed block naming addr (its instance, or its
// block), nil when none does.
func removedFor(removes []*config.Removed, addr config.Address) *config.Removed {
	for _, r := range removes {
		if r.From == addr || !r.From.HasKey && r.From.Name == addr.Name {
			return r
		}
	}
	return nil
}
