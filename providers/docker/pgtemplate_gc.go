package docker

import (
	"context"
	"errors"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"

	"github.com/sandboxer/sandboxer/apply"
)

var _ apply.TemplateCollector = (*Provider)(nil)

// CollectTemplates removes the template volumes (pgtemplate.go) that no
// configuration refers to: all but the newest of each key (a rebuilt or
// superseded build), and every template whose image is not what one of
// keep (the configuration's image refs) names now (an image rebuilt
// under the same tag, removed, or no longer configured). A template that
// a sandbox's container mounts is left (the engine refuses to remove it)
// and collected by a later pass. It also removes template builders that
// a killed run left, once older than any build takes.
//
// Templates are a cache shared by every configuration on the engine: one
// removed here that another project still uses costs that project one
// build (seconds), never a failure.
func (p *Provider) CollectTemplates(ctx context.Context, keep []string) ([]apply.Resource, error) {
	current := map[string]bool{}
	for _, ref := range keep {
		ii, err := p.cli.ImageInspect(ctx, ref)
		if cerrdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, p.engineErr("inspect image "+ref, err)
		}
		current[ii.ID] = true
	}
	f := filters.NewArgs(filters.Arg("label", LabelManaged+"=true"), filters.Arg("label", LabelTemplate))
	if p.templateSalt != "" {
		// A test collects its own templates only.
		f.Add("label", labelTemplateSalt+"="+p.templateSalt)
	}
	var out []apply.Resource
	var errs []error
	// Templates made with a salt (tests') belong to whoever set it:
	// another process's collection never takes them.
	foreign := func(labels map[string]string) bool {
		return p.templateSalt == "" && labels[labelTemplateSalt] != ""
	}
	cs, err := p.cli.ContainerList(ctx, container.ListOptions{All: true, Filters: f})
	if err != nil {
		return nil, p.engineErr("list template builders", err)
	}
	for _, c := range cs {
		if foreign(c.Labels) {
			continue
		}
		if time.Since(time.Unix(c.Created, 0)) < templateBuildTimeout+cleanupTimeout {
			continue // perhaps still building
		}
		if err := p.removeContainer(ctx, c.ID); err != nil {
			errs = append(errs, err)
			continue
		}
		out = append(out, apply.Resource{Kind: KindContainer, ID: c.ID, Name: trimSlash(firstName(c.Names)), Generation: -1})
	}
	vs, err := p.cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return out, p.engineErr("list template volumes", err)
	}
	newest := map[string]*volume.Volume{}
	var mine []*volume.Volume
	for _, v := range vs.Volumes {
		if !foreign(v.Labels) {
			mine = append(mine, v)
		}
	}
	for _, v := range mine {
		k := v.Labels[labelTemplateKey]
		if n := newest[k]; n == nil || v.CreatedAt > n.CreatedAt || (v.CreatedAt == n.CreatedAt && v.Name > n.Name) {
			newest[k] = v
		}
	}
	for _, v := range mine {
		if newest[v.Labels[labelTemplateKey]] == v && current[v.Labels[labelTemplateImage]] {
			continue
		}
		err := p.cli.VolumeRemove(ctx, v.Name, false)
		switch {
		case err == nil:
			out = append(out, apply.Resource{Kind: KindVolume, ID: v.Name, Name: v.Name, Generation: -1})
		case cerrdefs.IsNotFound(err), cerrdefs.IsConflict(err):
			// Gone already, or a sandbox started from it still runs.
		default:
			errs = append(errs, p.engineErr("remove template volume "+v.Name, err))
		}
	}
	return out, errors.Join(errs...)
}

func firstName(names []string) string {
	if len(names) == 0 {
		return ""
	}
	return names[0]
}
