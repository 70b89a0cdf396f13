package config

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Profile is a named preset of services and features inside a project,
// which a request can name instead of spelling them out
// (`sandboxer request sandbox.agent --key k --profile rag`). It is bounded
// like everything else in the project: its services must be opted in and
// its features on the allowlist.
type Profile struct {
	Name string
	// Services the profile asks for, sorted; nil when it does not say,
	// and then a request keeps the sandbox block's services.
	Services []string
	// Extensions are features added to the request, keyed by opted
	// services only.
	Extensions FeatureSet
	DeclRange  hcl.Range
}

var profileBlockSchema = &hcl.BodySchema{
	Attributes: []hcl.AttributeSchema{
		{Name: "services"},
		{Name: "extensions"},
	},
}

// decodeProfiles decodes the profile blocks nested in project p. known is
// false when p's services could not be read, which skips opt-in checks.
func (l *loader) decodeProfiles(p *Project, blocks hcl.Blocks, known bool) hcl.Diagnostics {
	var diags hcl.Diagnostics
	for _, b := range blocks {
		name := b.Labels[0]
		if !validName(name) {
			diags = append(diags, invalidNameDiag("profile", name, b.LabelRanges[0]))
			continue
		}
		if prev, ok := p.Profiles[name]; ok {
			diags = append(diags, duplicateDiag("profile", name, prev.DeclRange, b.DefRange))
			continue
		}
		pr, more := l.decodeProfileBlock(p, b, known)
		diags = append(diags, more...)
		if p.Profiles == nil {
			p.Profiles = map[string]*Profile{}
		}
		p.Profiles[name] = pr
	}
	return diags
}

func (l *loader) decodeProfileBlock(p *Project, b *hcl.Block, known bool) (*Profile, hcl.Diagnostics) {
	pr := &Profile{Name: b.Labels[0], Extensions: FeatureSet{}, DeclRange: b.DefRange}
	owner := fmt.Sprintf("profile %q of project.%s", pr.Name, p.Name)
	content, diags := b.Body.Content(profileBlockSchema)
	sc := scope{locals: true}
	if attr, ok := content.Attributes["services"]; ok {
		v, more := l.ev.eval(attr.Expr, sc)
		diags = append(diags, more...)
		items, ok, more := listItems(v, attr.Expr, "services")
		diags = append(diags, more...)
		if ok && len(items) == 0 && !more.HasErrors() {
			diags = append(diags, errorDiag("Empty services list",
				fmt.Sprintf("The %s must name at least one service, or leave services out to keep the sandbox's own.", owner),
				attr.Expr.Range()))
		}
		services := []string{}
		for _, it := range items {
			if err := l.cat.CheckService(it.Value); err != nil {
				diags = append(diags, catalogDiag(err, it.Range))
				continue
			}
			if known && !slices.Contains(p.Services, it.Value) {
				diags = append(diags, errorDiag("Service not opted in by project",
					fmt.Sprintf("The %s asks for %q, but project %q does not opt it in (%s). Add %q to project.%s services, or remove it from the profile.",
						owner, it.Value, p.Name, optedSet(p), it.Value, p.Name),
					it.Range))
				continue
			}
			services = append(services, it.Value)
		}
		if ok {
			pr.Services = SortedUnique(services)
		}
	}
	fs, more := l.extensionsAttr(content, sc, p, known, owner)
	pr.Extensions = fs
	return pr, append(diags, more...)
}

// ProfileNames lists a project's profiles, sorted, for messages.
func (p *Project) ProfileNames() []string {
	names := make([]string, 0, len(p.Profiles))
	for n := range p.Profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// UnknownProfileError says a request named a profile its project lacks.
type UnknownProfileError struct {
	Project  string
	Profile  string
	Declared []string
}

func (e *UnknownProfileError) Error() string {
	if len(e.Declared) == 0 {
		return fmt.Sprintf("project %q declares no profile %q (it declares no profiles; add a profile %q { … } block to project.%s)", e.Project, e.Profile, e.Profile, e.Project)
	}
	return fmt.Sprintf("project %q declares no profile %q (declared: %s)", e.Project, e.Profile, strings.Join(e.Declared, ", "))
}

// Profile returns the named profile of p, or an *UnknownProfileError.
func (p *Project) Profile(name string) (*Profile, error) {
	if pr, ok := p.Profiles[name]; ok {
		return pr, nil
	}
	return nil, &UnknownProfileError{Project: p.Name, Profile: name, Declared: p.ProfileNames()}
}
