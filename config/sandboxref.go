package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// InstanceAttributes are the attributes of sandbox.NAME.SERVICE in outputs,
// sorted: the names of state's credential attribute table.
func InstanceAttributes() []string {
	attrs := CredentialAttributes()
	names := make([]string, len(attrs))
	for i, a := range attrs {
		names[i] = a.Name
	}
	return names
}

// sandboxRef is what one sandbox.… reference in an output needs: one
// instance, or (addr nil) every instance of a keyed block.
type sandboxRef struct {
	block *Sandbox
	addr  *Address
	rng   hcl.Range
}

// keyed reports whether a block's instances are addressed with a key.
func keyed(sb *Sandbox) bool { return sb.ForEach || sb.OnDemand }

// resolveSandboxRef checks a reference sandbox.NAME[…].SERVICE.ATTR against
// the declared blocks, instances and their requested services.
func (c *Config) resolveSandboxRef(tr hcl.Traversal) (sandboxRef, hcl.Diagnostics) {
	rng := tr.SourceRange()
	ref := sandboxRef{rng: rng}
	fail := func(summary, detail string) (sandboxRef, hcl.Diagnostics) {
		return ref, hcl.Diagnostics{errorDiag(summary, detail, rng)}
	}
	if len(tr) < 2 {
		return fail("Invalid sandbox reference", "A sandbox reference must name a sandbox block, like sandbox.ci.postgres.url.")
	}
	step, ok := tr[1].(hcl.TraverseAttr)
	if !ok {
		return fail("Invalid sandbox reference", "A sandbox reference must name a sandbox block, like sandbox.ci.postgres.url.")
	}
	sb, ok := c.Sandboxes[step.Name]
	if !ok {
		return fail("Reference to undeclared sandbox",
			fmt.Sprintf("A sandbox block named %q has not been declared.%s", step.Name, c.declaredSandboxes()))
	}
	ref.block = sb
	rest := tr[2:]
	if keyed(sb) {
		if len(rest) == 0 {
			return ref, nil // the whole collection of instances
		}
		idx, ok := rest[0].(hcl.TraverseIndex)
		key, isString := "", false
		if ok {
			key, isString = stringKey(idx.Key)
		}
		if !isString {
			return fail("Missing sandbox instance key",
				fmt.Sprintf("sandbox.%s has %s, so its instances must be addressed by key, like sandbox.%s[\"KEY\"].", sb.Name, keyedBy(sb), sb.Name))
		}
		ref.addr = &Address{Name: sb.Name, Key: key, HasKey: true}
		rest = rest[1:]
		if sb.ForEach {
			if _, ok := c.Instance(*ref.addr); !ok {
				return fail("Reference to undeclared sandbox instance",
					fmt.Sprintf("sandbox.%s has no instance with key %q.%s", sb.Name, key, c.declaredKeys(sb.Name)))
			}
		}
	} else {
		ref.addr = &Address{Name: sb.Name}
		if len(rest) > 0 {
			if _, ok := rest[0].(hcl.TraverseIndex); ok {
				return fail("Unexpected sandbox instance key",
					fmt.Sprintf("sandbox.%s sets neither for_each nor on_demand, so it has a single instance, addressed without a key.", sb.Name))
			}
		}
	}
	if len(rest) == 0 {
		return ref, nil
	}
	svcStep, ok := rest[0].(hcl.TraverseAttr)
	if !ok {
		return fail("Invalid sandbox reference", "After the sandbox comes the name of a service it requests, like .postgres.")
	}
	services := c.requestedServices(sb, ref.addr)
	if !slices.Contains(services, svcStep.Name) {
		return fail("Reference to a service the sandbox does not request",
			fmt.Sprintf("%s does not request %q; it requests: %s.", refString(sb, ref.addr), svcStep.Name, strings.Join(services, ", ")))
	}
	if len(rest) > 1 {
		attr, ok := rest[1].(hcl.TraverseAttr)
		if !ok || !slices.Contains(InstanceAttributes(), attr.Name) {
			return fail("Unsupported sandbox attribute",
				fmt.Sprintf("A sandbox service has the attributes %s.", strings.Join(InstanceAttributes(), ", ")))
		}
	}
	return ref, nil
}

// requestedServices lists the services an instance requests; for an
// on-demand template (whose keyed instances do not exist yet) the
// template's.
func (c *Config) requestedServices(sb *Sandbox, addr *Address) []string {
	var out []string
	for _, in := range c.Instances {
		if in.Addr.Name != sb.Name {
			continue
		}
		if addr == nil || in.Addr == *addr || sb.OnDemand {
			out = append(out, in.Services...)
		}
	}
	return SortedUnique(out)
}

// sandboxObject builds the value of "sandbox" in outputs from provisioned
// instances. With vals nil every attribute is unknown, for checking.
func (c *Config) sandboxObject(vals map[Address]map[string]map[string]string) cty.Value {
	// Group instances by block once: looking them up block by block would
	// be quadratic in a configuration of many for_each blocks.
	declared := make(map[string][]*Instance, len(c.Sandboxes))
	for _, in := range c.Instances {
		declared[in.Addr.Name] = append(declared[in.Addr.Name], in)
	}
	provisioned := map[string][]Address{}
	for addr := range vals {
		if addr.HasKey {
			provisioned[addr.Name] = append(provisioned[addr.Name], addr)
		}
	}
	blocks := make(map[string]cty.Value, len(c.Sandboxes))
	for name, sb := range c.Sandboxes {
		if !keyed(sb) {
			addr := Address{Name: name}
			var decl *Instance
			if i := slices.IndexFunc(declared[name], func(in *Instance) bool { return in.Addr == addr }); i >= 0 {
				decl = declared[name][i]
			}
			blocks[name] = c.instanceObject(addr, decl, vals)
			continue
		}
		if vals == nil && sb.OnDemand {
			blocks[name] = cty.DynamicVal // keys are chosen at request time
			continue
		}
		insts := map[string]cty.Value{}
		if vals == nil {
			for _, in := range declared[name] {
				insts[in.Addr.Key] = c.instanceObject(in.Addr, in, nil)
			}
		}
		for _, addr := range provisioned[name] {
			insts[addr.Key] = c.instanceObject(addr, nil, vals)
		}
		blocks[name] = cty.ObjectVal(insts)
	}
	return cty.ObjectVal(blocks)
}

// instanceObject is sandbox.NAME[KEY]: service → attribute → string. An
// attribute the provider did not report (a redis database) is null. With
// vals nil, the services are those of decl, the instance declared at addr
// (nil when there is none).
func (c *Config) instanceObject(addr Address, decl *Instance, vals map[Address]map[string]map[string]string) cty.Value {
	var services map[string]map[string]string
	if vals == nil {
		services = map[string]map[string]string{}
		if decl != nil {
			for _, svc := range decl.Services {
				services[svc] = nil
			}
		}
	} else if s, ok := vals[addr]; ok {
		services = s
	} else {
		return cty.DynamicVal // not provisioned; references to it are reported
	}
	obj := make(map[string]cty.Value, len(services))
	table := CredentialAttributes()
	for svc, attrs := range services {
		av := make(map[string]cty.Value, len(table))
		for _, attr := range table {
			a := attr.Name
			ty := cty.String
			if attr.Number {
				ty = cty.Number // a port is a number, as Terraform users expect
			}
			switch v, ok := attrs[a]; {
			case vals == nil:
				av[a] = cty.UnknownVal(ty)
			case ok && ty == cty.Number:
				n, err := cty.ParseNumberVal(v)
				if err != nil {
					n = cty.NullVal(cty.Number)
				}
				av[a] = n
			case ok:
				av[a] = cty.StringVal(v)
			default:
				av[a] = cty.NullVal(ty)
			}
			if attr.Secret {
				av[a] = av[a].Mark(sensitiveMark)
			}
		}
		obj[svc] = cty.ObjectVal(av)
	}
	return cty.ObjectVal(obj)
}

func keyedBy(sb *Sandbox) string {
	if sb.OnDemand {
		return "on_demand set"
	}
	return "for_each set"
}

func refString(sb *Sandbox, addr *Address) string {
	if addr == nil {
		return "sandbox." + sb.Name
	}
	return addr.String()
}

func (c *Config) declaredSandboxes() string {
	names := make([]string, 0, len(c.Sandboxes))
	for n := range c.Sandboxes {
		names = append(names, n)
	}
	if len(names) == 0 {
		return " No sandboxes are declared."
	}
	return " Declared sandboxes: " + strings.Join(SortedUnique(names), ", ") + "."
}

func (c *Config) declaredKeys(name string) string {
	var keys []string
	for _, in := range c.Instances {
		if in.Addr.Name == name {
			keys = append(keys, fmt.Sprintf("%q", in.Addr.Key))
		}
	}
	if len(keys) == 0 {
		return " It has no instances."
	}
	return " Its keys are: " + strings.Join(keys, ", ") + "."
}
