package docker

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sort"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"

	"github.com/sandboxer/sandboxer/internal/redact"
	"github.com/sandboxer/sandboxer/providers/internal/kit"
	pgsvc "github.com/sandboxer/sandboxer/services/postgres"
)

// PostgreSQL template data directories (issue 31; services/postgres
// template.go says what a template is and holds). On Docker a template is
// a volume labelled with its key, made by a throwaway container of the
// very image (by image ID) that runs the image's own entrypoint and
// initdb, and mounted read-only into every sandbox started from it.
//
// The key is a hash of everything that shapes the data directory: the
// image ID (a rebuilt image under the same tag is a new template), the
// environment the entrypoint initialises with (admin name, initdb
// arguments, time zone, PATH), the server's arguments during init, the
// init script (app role and database names, the features and the
// allowlist), the image's service user, and the format of the template
// itself. The features are in it so that a sandbox's copy needs nothing
// but its passwords: CREATE EXTENSION and CREATE DATABASE cost a copy
// more than the rest of its start together. A new key
// is a new template; the old one is never reused.
//
// Concurrent first uses make one template: a builder holds the engine
// lock named after the key (enginelock.go) from before it creates the
// volume until after the marker is written. A sandbox uses a template it
// finds only once that lock is free; otherwise it waits for the lock and
// looks again. A template the sandbox's start script finds incomplete
// (a crashed build) or that the server refuses to open makes the
// container exit with pgsvc.TemplateDamaged: Create then rebuilds it
// under the lock, unless another sandbox already has, and starts a new
// container. Of several volumes of one key, the newest is the template;
// older ones are left to CollectTemplates.
const (
	// LabelTemplate marks a template volume and the container that builds
	// it; its value is the service.
	LabelTemplate      = "dev.sandboxer.template"
	labelTemplateKey   = "dev.sandboxer.template-key"
	labelTemplateBuild = "dev.sandboxer.template-build"
	labelTemplateImage = "dev.sandboxer.template-image"
	labelTemplateMajor = "dev.sandboxer.template-pg-major"
	labelTemplateSalt  = "dev.sandboxer.template-test" // tests only: Provider.templateSalt
	// templateFormat changes when what a template holds or how it is used
	// changes, so no template of another format is ever used.
	templateFormat = "pgtpl-2"
	// templateBuildTimeout bounds a build (initdb and the init script
	// took up to 90 s on a loaded two-core machine); it is below
	// templateLockStale, so no waiter takes the lock over from a live
	// builder.
	templateBuildTimeout = 5 * time.Minute
	templateLockStale    = 2 * templateBuildTimeout
	templateLockPurpose  = "pgtemplate"
	templateStartScript  = "pg-from-template.sh"
	// templateLockPoll: waiters for a build ask for its lock this often
	// (a build takes seconds; enginelock.go).
	templateLockPoll = 200 * time.Millisecond
	// templateLookupTime is longer than finding a template takes.
	templateLookupTime = 250 * time.Millisecond
)

// pgTemplate is one template volume.
type pgTemplate struct {
	Volume  string
	Key     string
	Build   string // the build's token, unique to each build
	created time.Time
	labels  map[string]string
}

// templatesOn reports whether sandboxes of this image start from a
// template: unless the provider turns them off, and unless the image runs
// its server as root (it could not run single-user mode as its service
// user before the entrypoint).
func (p *Provider) templatesOn(owner fileOwner) bool {
	return !p.cfg.NoTemplate && owner.UID != 0
}

// templateKey hashes what shapes a template (see above).
func templateKey(salt, imageID string, owner fileOwner, env, cmd []string) string {
	return kit.HashParts([]string{templateFormat + salt, imageID, fmt.Sprintf("%d:%d", owner.UID, owner.GID)}, env, cmd)[:32]
}

func templateLockName(key string) string { return "sbx-pgtpl-" + key[:16] + "-lock" }

// findTemplate returns the newest template volume of key, nil when none.
func (p *Provider) findTemplate(ctx context.Context, key string) (*pgTemplate, error) {
	f := filters.NewArgs(filters.Arg("label", LabelManaged+"=true"), filters.Arg("label", labelTemplateKey+"="+key))
	vs, err := p.cli.VolumeList(ctx, volume.ListOptions{Filters: f})
	if err != nil {
		return nil, p.engineErr("list template volumes", err)
	}
	var best *pgTemplate
	for _, v := range vs.Volumes {
		if v.Labels[LabelTemplate] == "" {
			continue
		}
		t := &pgTemplate{Volume: v.Name, Key: key, Build: v.Labels[labelTemplateBuild], labels: v.Labels}
		t.created, _ = time.Parse(time.RFC3339Nano, v.CreatedAt)
		if best == nil || t.created.After(best.created) || (t.created.Equal(best.created) && t.Volume > best.Volume) {
			best = t
		}
	}
	return best, nil
}

// templateBuild is what a build needs: the image, its service user, the
// entrypoint's environment, the server's arguments during init and the
// init script (the app role, database and extensions).
type templateBuild struct {
	ref   string
	ii    image.InspectResponse
	owner fileOwner
	env   []string
	cmd   []string
	init  []byte
	key   string
	admin string
}

// ensureTemplate returns the template of tb.key, building it if there is
// none or if the newest is the build bad (which a sandbox found damaged).
// Concurrent calls of one process for one key and bad share one answer
// (the engine lock makes one template across processes; this spares
// the engine their waiting).
func (p *Provider) ensureTemplate(ctx context.Context, b *build, tb templateBuild, bad string) (*pgTemplate, error) {
	ch := p.tpls.DoChan(tb.key+"/"+bad, func() (any, error) {
		// Not the caller's context: another caller may still want the
		// answer when this one gives up.
		return p.ensureTemplateNow(context.WithoutCancel(ctx), b, tb, bad)
	})
	// Finding a template takes milliseconds; one that takes longer is
	// being built (seconds), and the services ranked after PostgreSQL
	// need not wait for its container (order.go).
	building := time.NewTimer(templateLookupTime)
	defer building.Stop()
	for {
		select {
		case r := <-ch:
			if r.Err != nil {
				return nil, r.Err
			}
			return r.Val.(*pgTemplate), nil
		case <-building.C:
			b.starts.pass("postgres")
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func (p *Provider) ensureTemplateNow(ctx context.Context, b *build, tb templateBuild, bad string) (*pgTemplate, error) {
	if bad == "" {
		t, err := p.findTemplate(ctx, tb.key)
		if err != nil {
			return nil, err
		}
		if t != nil {
			// Found after its builder took the lock: complete once the
			// lock is gone (the builder removes a failed build before it
			// lets go; a crashed one is caught by the start script).
			_, err := p.cli.VolumeInspect(ctx, templateLockName(tb.key))
			if cerrdefs.IsNotFound(err) {
				return t, nil
			}
			if err != nil {
				return nil, p.engineErr("inspect template lock", err)
			}
		}
	}
	unlock, err := p.lockEngine(ctx, templateLockName(tb.key), map[string]string{
		LabelManaged: "true",
		LabelLock:    templateLockPurpose,
	}, templateLockPoll, templateLockStale)
	if err != nil {
		return nil, err
	}
	defer unlock()
	t, err := p.findTemplate(ctx, tb.key)
	if err != nil {
		return nil, err
	}
	if t != nil && (bad == "" || t.Build != bad) {
		return t, nil
	}
	if t != nil {
		// Damaged: remove it if no container uses it any more; else
		// the new one is newer and CollectTemplates removes this later.
		_ = p.cli.VolumeRemove(ctx, t.Volume, false)
	}
	return p.buildTemplate(ctx, b, tb)
}

// buildTemplate initialises a new template volume in a throwaway
// container of the image, by the image's own entrypoint. The entrypoint
// runs as the image says (as root, dropping to its service user, for the
// official images), with POSTGRES_USER the admin, a throwaway password
// the revoke script removes again, and PGDATA in the template volume;
// the finish script stops the temporary server, writes the marker and
// ends the container with 0. No network: nothing needs to reach it.
func (p *Provider) buildTemplate(ctx context.Context, b *build, tb templateBuild) (_ *pgTemplate, err error) {
	token, err := lockToken()
	if err != nil {
		return nil, err
	}
	name := "sbx-pgtpl-" + tb.key[:16] + "-" + token[:8]
	labels := map[string]string{
		LabelManaged:       "true",
		LabelTemplate:      "postgres",
		labelTemplateKey:   tb.key,
		labelTemplateBuild: token,
		labelTemplateImage: tb.ii.ID,
		labelTemplateMajor: imageEnv(tb.ii, "PG_MAJOR"),
	}
	if p.templateSalt != "" {
		labels[labelTemplateSalt] = p.templateSalt
	}
	if _, err := p.cli.VolumeCreate(ctx, volume.CreateOptions{Name: name, Driver: "local", Labels: labels}); err != nil {
		return nil, p.engineErr("create template volume", err)
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout+templateBuildTimeout)
	defer cancel()
	var id string
	defer func() {
		if id != "" {
			if rerr := p.removeContainer(cctx, id); rerr != nil && err == nil {
				err = rerr
			}
		}
		if err != nil {
			if rerr := p.cli.VolumeRemove(cctx, name, true); rerr != nil && !cerrdefs.IsNotFound(rerr) {
				err = errors.Join(err, p.engineErr("remove failed template volume", rerr))
			}
		}
	}()
	throwaway, err := redact.NewPassword()
	if err != nil {
		return nil, err
	}
	b.addSecrets(throwaway)
	if p.onSecrets != nil {
		p.onSecrets(throwaway.Reveal())
	}
	bctx, bcancel := context.WithTimeout(ctx, templateBuildTimeout)
	defer bcancel()
	cfg := &container.Config{
		Image:           tb.ii.ID, // the image the key names, even if its tag moves meanwhile
		Env:             append(append([]string{}, tb.env...), "PGDATA="+pgsvc.TemplateData),
		Cmd:             tb.cmd,
		Hostname:        "postgres",
		NetworkDisabled: true,
		Labels:          labels,
	}
	host := &container.HostConfig{
		NetworkMode: "none",
		SecurityOpt: []string{"no-new-privileges"},
		Tmpfs:       tmpfsMounts(tb.ii),
		Mounts:      []mount.Mount{{Type: mount.TypeVolume, Source: name, Target: pgsvc.TemplateMount}},
	}
	if p.cfg.MemoryMB > 0 {
		host.Memory = p.cfg.MemoryMB * 1024 * 1024
	}
	resp, err := p.cli.ContainerCreate(cctx, cfg, host, nil, nil, name+"-build")
	if err != nil {
		return nil, p.engineErr("create template builder", err)
	}
	id = resp.ID
	files := []containerFile{
		{Path: secretPath(pgPasswordFile), Content: []byte(throwaway.Reveal()), Mode: 0o400},
		{Path: path.Join(pgsvc.InitDir, pgsvc.TemplateInitName), Content: tb.init, Mode: 0o444},
		{Path: path.Join(pgsvc.InitDir, pgsvc.TemplateRevokeName), Content: pgsvc.TemplateRevokeSQL(tb.admin), Mode: 0o444},
		{Path: path.Join(pgsvc.InitDir, pgsvc.TemplateFinishName), Content: pgsvc.TemplateFinishScript(tb.key), Mode: 0o444},
	}
	if err := p.copyFiles(bctx, id, tb.owner, files...); err != nil {
		return nil, fmt.Errorf("copy init files into the template builder: %w", err)
	}
	if err := p.cli.ContainerStart(bctx, id, container.StartOptions{}); err != nil {
		return nil, p.engineErr("start template builder", err)
	}
	exited, waitErr := p.cli.ContainerWait(bctx, id, container.WaitConditionNotRunning)
	select {
	case r := <-exited:
		if r.StatusCode != 0 {
			return nil, fmt.Errorf("template of %s: the image's entrypoint exited with code %d; its log:\n%s",
				tb.ref, r.StatusCode, b.scrubText(p.logTail(cctx, id, logTailLines)))
		}
	case err := <-waitErr:
		return nil, fmt.Errorf("template of %s: %w", tb.ref, p.engineErr("wait for template builder", err))
	}
	return &pgTemplate{Volume: name, Key: tb.key, Build: token, labels: labels}, nil
}

// templateSpec turns the container spec of a sandbox started from
// scratch into one started from template t: as the image's service user,
// the start script as entrypoint with the image's own entrypoint and
// command as its arguments, the template mounted read-only, a tmpfs data
// directory owned by the service user.
func templateSpec(spec containerSpec, ii image.InspectResponse, owner fileOwner, pgdata string, t *pgTemplate) containerSpec {
	out := spec
	out.User = fmt.Sprintf("%d:%d", owner.UID, owner.GID)
	out.Entrypoint = []string{"/bin/sh", secretPath(templateStartScript)}
	var ep []string
	if ii.Config != nil {
		ep = ii.Config.Entrypoint
	}
	out.Cmd = append(append([]string{}, ep...), spec.Cmd...)
	// No password file: the entrypoint finds an initialised directory,
	// but would still read the file it names.
	out.Env = []string{"PGDATA=" + pgdata}
	for _, e := range spec.Env {
		if !strings.HasPrefix(e, "POSTGRES_PASSWORD_FILE=") {
			out.Env = append(out.Env, e)
		}
	}
	// Labelled like the template: should CollectTemplates remove it
	// between finding and mounting, the engine makes an empty volume of
	// that name, which the start script finds damaged and the collector
	// removes later; no unlabelled volume is ever made.
	out.Mounts = []mount.Mount{{Type: mount.TypeVolume, Source: t.Volume, Target: pgsvc.TemplateMount, ReadOnly: true,
		VolumeOptions: &mount.VolumeOptions{NoCopy: true, Labels: t.labels}}}
	out.Tmpfs = map[string]string{}
	for dir, opts := range spec.Tmpfs {
		if below(pgdata, dir) {
			opts = fmt.Sprintf("uid=%d,gid=%d,mode=0700", owner.UID, owner.GID)
		}
		out.Tmpfs[dir] = opts
	}
	return out
}

// sortedEnv is env in a stable order, for the key.
func sortedEnv(env []string) []string {
	out := append([]string{}, env...)
	sort.Strings(out)
	return out
}
