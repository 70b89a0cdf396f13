package plan

import (
	"sort"

	"github.com/zclconf/go-cty/cty"

	"github.com/sandboxer/sandboxer/config"
)

// CheckResult is a check block's outcome as a plan carries it: saved
// with the plan, and in the plan JSON's checks array. Status is
// Terraform's word (pass, fail, error); Problems are the failed
// assertions' error messages.
type CheckResult struct {
	Name     string   `json:"name"`
	Status   string   `json:"status"`
	Problems []string `json:"problems,omitempty"`
}

// CheckResults turns config.RunChecks' results into the plan's.
func CheckResults(rs []config.CheckResult) []CheckResult {
	out := make([]CheckResult, 0, len(rs))
	for _, r := range rs {
		c := CheckResult{Name: r.Check.Name, Status: string(r.Status)}
		for _, d := range r.Problems {
			c.Problems = append(c.Problems, config.Message(d))
		}
		out = append(out, c)
	}
	return out
}

// CheckValues are what check blocks read of a plan (config.EvalChecks):
// sandbox.NAME (or sandbox.NAME["KEY"]) for every change, an object of
// action ("create", "replace", "delete", "forget", "no-op"), reason,
// moved_from ("" when not moved), project, services, features (service
// → list), ttl_seconds (0 for none); and plan, the counts (create,
// replace, delete, reuse, forget, moved) and destroy.
func CheckValues(p *Plan) (sandbox, planValue cty.Value) {
	blocks := map[string]cty.Value{}
	keyed := map[string]map[string]cty.Value{}
	for _, c := range p.Changes {
		obj := changeValue(c)
		if c.Addr.HasKey {
			if keyed[c.Addr.Name] == nil {
				keyed[c.Addr.Name] = map[string]cty.Value{}
			}
			keyed[c.Addr.Name][c.Addr.Key] = obj
			continue
		}
		blocks[c.Addr.Name] = obj
	}
	for name, m := range keyed {
		blocks[name] = cty.ObjectVal(m)
	}
	s := p.Summary()
	planValue = cty.ObjectVal(map[string]cty.Value{
		"create":  cty.NumberIntVal(int64(s.Create)),
		"replace": cty.NumberIntVal(int64(s.Replace)),
		"delete":  cty.NumberIntVal(int64(s.Delete)),
		"reuse":   cty.NumberIntVal(int64(s.Reuse)),
		"forget":  cty.NumberIntVal(int64(s.Forget)),
		"moved":   cty.NumberIntVal(int64(p.Moves())),
		"destroy": cty.BoolVal(p.Destroy),
	})
	return cty.ObjectVal(blocks), planValue
}

func changeValue(c *Change) cty.Value {
	shape := c.After
	if shape == nil {
		shape = c.Before
	}
	services := []cty.Value{}
	features := map[string]cty.Value{}
	if shape != nil {
		for _, svc := range shape.Services {
			services = append(services, cty.StringVal(svc))
		}
		svcs := make([]string, 0, len(shape.Features))
		for svc := range shape.Features {
			svcs = append(svcs, svc)
		}
		sort.Strings(svcs)
		for _, svc := range svcs {
			l := []cty.Value{}
			for _, f := range shape.Features[svc] {
				l = append(l, cty.StringVal(f))
			}
			features[svc] = cty.TupleVal(l)
		}
	}
	action := c.Action.String()
	return cty.ObjectVal(map[string]cty.Value{
		"action":      cty.StringVal(action),
		"reason":      cty.StringVal(string(c.Reason)),
		"moved_from":  cty.StringVal(c.PrevAddr),
		"project":     cty.StringVal(c.Project),
		"services":    cty.TupleVal(services),
		"features":    cty.ObjectVal(features),
		"ttl_seconds": cty.NumberIntVal(int64(c.TTL.Seconds())),
	})
}
