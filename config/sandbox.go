package config

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

var sandboxBlockSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "project", Required: true},
		{Name: "services"},
		{Name: "extensions"},
		{Name: "ttl"},
		{Name: "on_demand"},
		{Name: "for_each"},
		{Name: "networks"}, // reach.go
		{Name: "database"},
		{Name: "env_prefix"},
		{Name: "seed_sql"},
		{Name: "seed_snapshot"},
		{Name: "carry_data"},
		{Name: "runtime"}, // kubernetes.go
	},
	Blocks: []hcl.BlockHeaderSchema{{Type: "pool"}}, // pool.go
}

// decodeSandboxes decodes every sandbox block into Config.Sandboxes and
// expands them into Config.Instances, sorted by address.
func (l *loader) decodeSandboxes(blocks hcl.Blocks) hcl.Diagnostics {
	return l.decodeSandboxesMemo(blocks, newSandboxMemo())
}

// decodeSandboxesMemo is decodeSandboxes with the given memo (nil: none,
// every block decoded in full; sandbox_memo.go).
func (l *loader) decodeSandboxesMemo(blocks hcl.Blocks, memo *sandboxMemo) hcl.Diagnostics {
	var diags hcl.Diagnostics
	pre := l.predecodeSandboxes(blocks, memo)
	for i, b := range blocks {
		if l.ev.ctx.Err() != nil {
			break
		}
		name := b.Labels[0]
		if !validName(name) {
			diags = append(diags, invalidNameDiag("sandbox", name, b.LabelRanges[0]))
			continue
		}
		if prev, ok := l.cfg.Sandboxes[name]; ok {
			diags = append(diags, duplicateDiag("sandbox", name, prev.DeclRange, b.DefRange))
			continue
		}
		var sb *Sandbox
		var insts []*Instance
		var more hcl.Diagnostics
		if pre != nil && pre[i] != nil {
			sb, insts, more = pre[i].sb, pre[i].insts, pre[i].diags
		} else {
			sb, insts, more = l.decodeSandboxBlockMemo(b, memo, false)
		}
		diags = append(diags, more...)
		l.cfg.Sandboxes[name] = sb
		l.cfg.Instances = append(l.cfg.Instances, insts...)
	}
	sortInstances(l.cfg.Instances)
	return diags
}

// decodeSandboxBlock decodes one sandbox block and its instances: one per
// for_each key, or one at sandbox.NAME. An on_demand block yields its
// template instance at sandbox.NAME; request makes the keyed ones.
//
// memo (nil: none) holds what earlier blocks decoded (sandbox_memo.go).
func (l *loader) decodeSandboxBlock(b *hcl.Block, memo *sandboxMemo) (*Sandbox, []*Instance, hcl.Diagnostics) {
	sb := &Sandbox{Name: b.Labels[0], DeclRange: b.DefRange}
	content, diags := blockContent(b.Body, sandboxBlockSchema)

	var p *Project
	checkOptIn := false
	if attr, ok := content.Attributes["project"]; ok {
		var more hcl.Diagnostics
		p, more = l.projectRef(attr.Expr)
		diags = append(diags, more...)
		if p != nil {
			sb.Project = p.Name
			checkOptIn = !l.unknownServices[p.Name]
		}
	}
	if attr, ok := content.Attributes["on_demand"]; ok {
		v, more := l.ev.eval(attr.Expr, blockScope())
		diags = append(diags, more...)
		bv, ok, more := typed(v, attr.Expr, cty.Bool, "on_demand")
		diags = append(diags, more...)
		sb.OnDemand = ok && bv.True()
	}

	keys := []eachItem{{}}
	if attr, ok := content.Attributes["for_each"]; ok {
		sb.ForEach = true
		var more hcl.Diagnostics
		keys, more = l.forEach(attr.Expr)
		diags = append(diags, more...)
		if sb.OnDemand {
			diags = append(diags, errorDiag("Invalid combination of for_each and on_demand",
				fmt.Sprintf("sandbox.%s sets both. An on_demand sandbox is a template whose instances are keyed by \"sandboxer request --key\", so it cannot also declare its keys with for_each.", sb.Name),
				attr.NameRange))
		}
	}

	// When no argument mentions each, every instance decodes alike: the
	// arguments are evaluated once and the instances differ only in their
	// address, which keeps a 100k-key for_each linear and cheap.
	perKey := sb.ForEach && refersToEach(content)
	var shared *Instance
	insts := make([]*Instance, 0, len(keys))
	for i, k := range keys {
		if l.ev.ctx.Err() != nil {
			break
		}
		addr := Address{Name: sb.Name}
		if sb.ForEach {
			addr = Address{Name: sb.Name, Key: k.key, HasKey: true}
		}
		if !perKey && i > 0 {
			if shared != nil {
				inst := *shared
				inst.Addr = addr
				insts = append(insts, &inst)
			}
			continue
		}
		sc := blockScope()
		if perKey {
			each := cty.ObjectVal(map[string]cty.Value{"key": cty.StringVal(k.key), "value": k.value})
			sc.each = &each
		}
		inst, more := l.decodeInstance(sb, p, checkOptIn, content, addr, sc, memo)
		diags = append(diags, more...)
		if inst != nil {
			insts = append(insts, inst)
			shared = inst
		}
	}
	sb.TTL = commonTTL(insts)
	pool, more := l.decodePool(sb, content.Blocks)
	sb.Pool = pool
	diags = append(diags, more...)
	return sb, insts, diags
}

// refersToEach reports whether any argument of a sandbox block mentions
// each (each.key, each.value).
func refersToEach(content *hcl.BodyContent) bool {
	for name, attr := range content.Attributes {
		if name == "for_each" {
			continue
		}
		for _, tr := range attr.Expr.Variables() {
			if tr.RootName() == "each" {
				return true
			}
		}
	}
	return false
}

// projectRef resolves the project argument, which must be a plain
// reference project.NAME rather than a computed value.
func (l *loader) projectRef(expr hcl.Expression) (*Project, hcl.Diagnostics) {
	tr, diags := hcl.AbsTraversalForExpr(expr)
	var name string
	if !diags.HasErrors() && len(tr) == 2 && tr.RootName() == "project" {
		if a, ok := tr[1].(hcl.TraverseAttr); ok {
			name = a.Name
		}
	}
	if name == "" {
		return nil, hcl.Diagnostics{errorDiag("Invalid project reference",
			"The project argument must be a reference to a project block, like project.billing.", expr.Range())}
	}
	p, ok := l.cfg.Projects[name]
	if !ok {
		return nil, hcl.Diagnostics{errorDiag("Reference to undeclared project",
			fmt.Sprintf("A project named %q has not been declared.%s", name, l.ev.declaredProjects()), expr.Range())}
	}
	return p, nil
}

// decodeInstance evaluates the per-instance arguments and computes the
// effective sets. p is nil when the project is missing: the arguments are
// still checked, but no instance is produced.
func (l *loader) decodeInstance(sb *Sandbox, p *Project, checkOptIn bool, content *hcl.BodyContent, addr Address, sc scope, memo *sandboxMemo) (*Instance, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	owner := "sandbox." + sb.Name
	var requested []string
	if p != nil {
		requested = p.Services // default: everything the project opts in
	}
	attr, custom := content.Attributes["services"]
	if custom {
		v, more := l.ev.eval(attr.Expr, sc)
		diags = append(diags, more...)
		items, ok, more := listItems(v, attr.Expr, "services")
		diags = append(diags, more...)
		if ok {
			requested = nil
		}
		if ok && len(items) == 0 && !more.HasErrors() {
			diags = append(diags, errorDiag("Empty services list",
				fmt.Sprintf("%s must request at least one service. Remove the services argument to request every service its project opts in.", owner),
				attr.Expr.Range()))
		}
		for _, it := range items {
			if err := l.cat.CheckService(it.Value); err != nil {
				diags = append(diags, catalogDiag(err, it.Range))
				continue
			}
			if p != nil && checkOptIn && !slices.Contains(p.Services, it.Value) {
				diags = append(diags, errorDiag("Service not opted in by project",
					fmt.Sprintf("%s requests %q, but project %q does not opt it in (%s). Add %q to project.%s services, or remove it from %s.",
						owner, it.Value, p.Name, optedSet(p), it.Value, p.Name, owner),
					it.Range))
				continue
			}
			requested = append(requested, it.Value)
		}
	}
	// The provision set follows from the project and the extensions
	// alone; a memo may hold it from an earlier block (sandbox_memo.go).
	override := FeatureSet{}
	extAttr, hasExt := content.Attributes["extensions"]
	var keyBuf [128]byte
	setsKey, memoSets := l.setsKey(keyBuf[:0], memo, p, checkOptIn, extAttr)
	provision, hit := memo.sets(setsKey, memoSets)
	if !hit && hasExt {
		check := p
		if !checkOptIn {
			check = nil
		}
		fs, more := l.extensionsValue(extAttr.Expr, sc, check, owner)
		diags = append(diags, more...)
		override = fs
		memoSets = memoSets && len(more) == 0
	}
	var ttl time.Duration
	if attr, ok := content.Attributes["ttl"]; ok {
		var more hcl.Diagnostics
		ttl, more = l.ttl(attr, sc)
		diags = append(diags, more...)
	}
	runtime, more := l.runtimeAttr(content, sc)
	diags = append(diags, more...)
	if runtime == "" && p != nil {
		runtime = p.Runtime
	}
	if runtime == "" {
		runtime = l.cfg.DefaultRuntime
	}
	prov := l.cfg.ProviderFor(runtime)
	networks := prov.Networks
	if attr, ok := content.Attributes["networks"]; ok {
		if runtime == RuntimeKubernetes {
			diags = append(diags, errorDiag("Docker setting on a Kubernetes sandbox",
				fmt.Sprintf("%s runs on kubernetes, where networks (Docker user networks) do not exist: pods share the cluster's network and in-cluster clients reach a sandbox by its Service name. Remove networks, or set runtime = \"docker\".", owner),
				attr.NameRange))
		} else {
			own, more := l.instanceNetworks(attr, sc, addr)
			diags = append(diags, more...)
			networks = SortedUnique(append(slices.Clone(networks), own...))
		}
	}
	var opted []string
	if p != nil && checkOptIn {
		opted = p.Services
	}
	fw, more := l.decodeFrameworkSettings(content, sc, opted, owner)
	diags = append(diags, more...)
	data, more := l.decodeDataSettings(content, sc, owner)
	diags = append(diags, more...)
	if p == nil {
		return nil, diags
	}
	if !hit {
		provision = p.Extensions.UnionOnly(override, p.Services)
		memo.storeSets(setsKey, memoSets, provision)
	}
	// Without a services argument an instance asks for every opted
	// service: its sets are the project's, already sorted and unique, and
	// provision.Only of them is provision itself. They are shared, read
	// only, as the instances of a for_each block share theirs.
	services, features := p.Services, provision
	if custom {
		services = SortedUnique(requested)
		features = provision.Only(services)
	}
	return &Instance{
		Addr:      addr,
		Project:   p.Name,
		Services:  services,
		Features:  features,
		Provision: provision,
		TTL:       ttl,
		OnDemand:  sb.OnDemand,
		Networks:  networks,
		Publish:   prov.Publish,
		Database:  or(fw.Database, p.Database),
		EnvPrefix: or(fw.EnvPrefix, p.EnvPrefix),
		Seed:      mergeSeed(data.Seed, p.Seed),
		CarryData: data.CarryData,
		Runtime:   runtime,
		DeclRange: sb.DeclRange,
	}, diags
}

// ttl evaluates a ttl argument: a duration string within MinTTL and
// MaxTTL, or exactly "0" for never ("0s" is refused as too short, so a
// typo cannot mean forever). No ttl argument also means never.
func (l *loader) ttl(attr *hcl.Attribute, sc scope) (time.Duration, hcl.Diagnostics) {
	v, diags := l.ev.eval(attr.Expr, sc)
	s, ok, more := typed(v, attr.Expr, cty.String, "ttl")
	diags = append(diags, more...)
	if !ok {
		return 0, diags
	}
	d, err := ParseTTLBounded(s.AsString(), true)
	if err != nil {
		return 0, append(diags, errorDiag("Invalid ttl",
			fmt.Sprintf("%s. A ttl is a duration from %s to %s such as \"30m\", \"4h\" or \"7d\", or \"0\" for a sandbox that never expires.", upperFirst(err.Error()), formatTTL(MinTTL), formatTTL(MaxTTL)),
			attr.Expr.Range()))
	}
	return d, diags
}

// commonTTL is the TTL all instances share, or 0 when they differ (or
// there are none); Instance.TTL is always exact.
func commonTTL(insts []*Instance) time.Duration {
	if len(insts) == 0 {
		return 0
	}
	for _, in := range insts[1:] {
		if in.TTL != insts[0].TTL {
			return 0
		}
	}
	return insts[0].TTL
}

// sortInstances sorts by address, rendering each address once: rendering
// it in every comparison was a quarter of expanding 100,000 keys.
func sortInstances(insts []*Instance) {
	type keyed struct {
		key  string
		inst *Instance
	}
	ks := make([]keyed, len(insts))
	for i, in := range insts {
		ks[i] = keyed{in.Addr.String(), in}
	}
	sort.Slice(ks, func(i, j int) bool { return ks[i].key < ks[j].key })
	for i, k := range ks {
		insts[i] = k.inst
	}
}
