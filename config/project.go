package config

import (
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

var projectBlockSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "services", Required: true},
		{Name: "extensions"},
		{Name: "database"},
		{Name: "env_prefix"},
		{Name: "seed_sql"},
		{Name: "seed_snapshot"},
		{Name: "runtime"}, // kubernetes.go
	},
	Blocks: []hcl.BlockHeaderSchema{
		{Type: "profile", LabelNames: []string{"name"}},
	},
}

// decodeProjects decodes every project block into Config.Projects.
func (l *loader) decodeProjects(blocks hcl.Blocks) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, b := range blocks {
		name := b.Labels[0]
		if !validName(name) {
			diags = append(diags, invalidNameDiag("project", name, b.LabelRanges[0]))
			continue
		}
		if prev, ok := l.cfg.Projects[name]; ok {
			diags = append(diags, duplicateDiag("project", name, prev.DeclRange, b.DefRange))
			continue
		}
		p, known, more := l.decodeProjectBlock(b)
		diags = append(diags, more...)
		l.cfg.Projects[name] = p
		if !known {
			l.unknownServices[name] = true
		}
	}
	return diags
}

// decodeProjectBlock decodes one project. known is false when the services
// list could not be read: its opted set is then not checked against, so one
// mistake does not cascade into "not opted in" errors.
func (l *loader) decodeProjectBlock(b *hcl.Block) (p *Project, known bool, diags hcl.Diagnostics) {
	p = &Project{Name: b.Labels[0], Services: []string{}, Extensions: FeatureSet{}, DeclRange: b.DefRange}
	content, diags := b.Body.Content(projectBlockSchema)
	sc := scope{locals: true}
	if attr, ok := content.Attributes["services"]; ok {
		v, more := l.ev.eval(attr.Expr, sc)
		diags = append(diags, more...)
		items, ok, more := listItems(v, attr.Expr, "services")
		diags = append(diags, more...)
		known = ok
		var services []string
		for _, it := range items {
			if err := l.cat.CheckService(it.Value); err != nil {
				diags = append(diags, catalogDiag(err, it.Range))
				continue
			}
			services = append(services, it.Value)
		}
		p.Services = SortedUnique(services)
		// null is how HCL says "not set", and services is required.
		if (ok && len(items) == 0 || !ok && v.IsKnown() && v.IsNull()) && !more.HasErrors() {
			diags = append(diags, errorDiag("Empty services list",
				fmt.Sprintf("Project %q must opt in at least one service; known services: %s.", p.Name, strings.Join(l.cat.Services(), ", ")),
				attr.Expr.Range()))
		}
	}
	standing, more := l.extensionsAttr(content, sc, p, known, "project."+p.Name)
	diags = append(diags, more...)
	// Every opted service is present; one without extensions is bare.
	p.Extensions = standing.Only(p.Services).Normalize()
	var opted []string
	if known {
		opted = p.Services
	}
	fw, more := l.decodeFrameworkSettings(content, sc, opted, "project."+p.Name)
	diags = append(diags, more...)
	p.Database, p.EnvPrefix = fw.Database, fw.EnvPrefix
	data, more := l.decodeDataSettings(content, sc, "project."+p.Name)
	diags = append(diags, more...)
	p.Seed = data.Seed
	p.Runtime, more = l.runtimeAttr(content, sc)
	diags = append(diags, more...)
	diags = append(diags, l.decodeProfiles(p, content.Blocks, known)...)
	return p, known, diags
}

// extensionsAttr decodes a block's optional extensions attribute (empty when
// absent) for its owner, checked against p's opted set when known (a
// services list that could not be read would only cascade into "not opted
// in" errors).
func (l *loader) extensionsAttr(content *hcl.BodyContent, sc scope, p *Project, known bool, owner string) (FeatureSet, hcl.Diagnostics) {
	attr, ok := content.Attributes["extensions"]
	if !ok {
		return FeatureSet{}, nil
	}
	if !known {
		p = nil
	}
	return l.extensionsValue(attr.Expr, sc, p, owner)
}

// featureSet decodes an extensions map: service → features. Keys must be
// catalog services the project opts in, and features must be on the
// allowlist. owner names the block for the fix in the message; p nil skips
// the opt-in check.
func (l *loader) featureSet(v cty.Value, expr hcl.Expression, p *Project, owner string) (FeatureSet, hcl.Diagnostics) {
	items, _, diags := mapItems(v, expr, cty.List(cty.String), "extensions")
	entries := make([]featureEntry, len(items))
	for i, it := range items {
		entries[i] = featureEntry{Key: it.Key, KeyRange: it.KeyRange, features: func() ([]item, hcl.Diagnostics) {
			feats, _, more := listItems(it.Value, it.ValueExpr, "extensions")
			return feats, more
		}}
	}
	return l.checkFeatures(entries, p, owner, diags)
}

// extensionsValue is featureSet of expr's value, read from the syntax
// tree when it is a literal map of literal lists (literalvalue.go).
func (l *loader) extensionsValue(expr hcl.Expression, sc scope, p *Project, owner string) (FeatureSet, hcl.Diagnostics) {
	if entries, ok := literalFeatureEntries(expr); ok {
		return l.checkFeatures(entries, p, owner, nil)
	}
	v, diags := l.ev.eval(expr, sc)
	fs, more := l.featureSet(v, expr, p, owner)
	return fs, append(diags, more...)
}

func (l *loader) checkFeatures(entries []featureEntry, p *Project, owner string, diags hcl.Diagnostics) (FeatureSet, hcl.Diagnostics) {
	fs := make(FeatureSet, len(entries))
	for _, it := range entries {
		if err := l.cat.CheckService(it.Key); err != nil {
			diags = append(diags, catalogDiag(err, it.KeyRange))
			continue
		}
		if p != nil && !slices.Contains(p.Services, it.Key) {
			diags = append(diags, errorDiag("Extensions for a service not opted in",
				fmt.Sprintf("Project %q does not opt in %q (%s). Add %q to project.%s services, or remove it from the extensions of %s.",
					p.Name, it.Key, optedSet(p), it.Key, p.Name, owner),
				it.KeyRange))
			continue
		}
		feats, more := it.features()
		diags = append(diags, more...)
		list := make([]string, 0, len(feats))
		for _, f := range feats {
			if err := l.cat.CheckFeature(it.Key, f.Value); err != nil {
				diags = append(diags, catalogDiag(err, f.Range))
				continue
			}
			list = append(list, f.Value)
		}
		fs[it.Key] = list
	}
	// Normalize in place: the lists are this function's own.
	for svc, feats := range fs {
		slices.Sort(feats)
		fs[svc] = slices.Compact(feats)
	}
	return fs, diags
}

// optedSet describes a project's opted-in services for messages.
func optedSet(p *Project) string {
	if len(p.Services) == 0 {
		return "it opts in no services"
	}
	return "it opts in: " + strings.Join(p.Services, ", ")
}
