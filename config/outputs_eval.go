package config

import (
	"context"
	"fmt"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// EvalOutputs evaluates the outputs against provisioned instances: vals
// maps each provisioned address to service → attribute → value, with the
// attributes of InstanceAttributes. An output that refers to an instance
// missing from vals is left out of the result and reported with an error
// naming the instance; the other outputs are still evaluated.
func (c *Config) EvalOutputs(vals map[Address]map[string]map[string]string) (map[string]cty.Value, hcl.Diagnostics) {
	if vals == nil {
		vals = map[Address]map[string]map[string]string{}
	}
	ev := newEvaluator(context.Background(), c)
	for name := range c.Locals {
		ev.localNames[name] = true
	}
	ev.settle()
	sc := outputScope(c.sandboxObject(vals))
	out := make(map[string]cty.Value, len(c.Outputs))
	var diags hcl.Diagnostics
	for _, o := range c.Outputs {
		missing := c.missingInstances(o, vals)
		if missing.HasErrors() {
			diags = append(diags, missing...)
			continue
		}
		v, more := ev.eval(o.Expr, sc)
		diags = append(diags, more...)
		if more.HasErrors() {
			continue
		}
		// Load could not see through on-demand instances (their keys are
		// chosen at request time); the values can.
		if sens := checkSensitive(o, v); sens.HasErrors() {
			diags = append(diags, sens...)
			continue
		}
		out[o.Name] = unmarked(v)
	}
	return out, dedupe(diags)
}

// missingInstances reports the instances an output refers to that have
// not been provisioned.
func (c *Config) missingInstances(o *Output, vals map[Address]map[string]map[string]string) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, tr := range o.Expr.Variables() {
		if tr.RootName() != "sandbox" {
			continue
		}
		ref, more := c.resolveSandboxRef(tr)
		if more.HasErrors() {
			diags = append(diags, more...)
			continue
		}
		for _, addr := range c.neededAddrs(ref) {
			if _, ok := vals[addr]; !ok {
				diags = append(diags, errorDiag("Sandbox not provisioned",
					fmt.Sprintf("Output %q refers to %s, which has not been provisioned. Run \"sandboxer apply\"%s first.", o.Name, addr, requestHint(ref.block, addr)),
					ref.rng))
			}
		}
	}
	return diags
}

// neededAddrs lists the instances a reference reads. The whole collection
// of a for_each block needs every declared instance; that of an on_demand
// block is whatever has been requested.
func (c *Config) neededAddrs(ref sandboxRef) []Address {
	if ref.addr != nil {
		return []Address{*ref.addr}
	}
	if ref.block == nil || ref.block.OnDemand {
		return nil
	}
	var out []Address
	for _, in := range c.Instances {
		if in.Addr.Name == ref.block.Name {
			out = append(out, in.Addr)
		}
	}
	return out
}

func requestHint(sb *Sandbox, addr Address) string {
	if sb != nil && sb.OnDemand {
		return fmt.Sprintf(" or \"sandboxer request %s --key %s\"", addr.Block(), addr.Key)
	}
	return ""
}
