package docker

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	pgsvc "github.com/sandboxer/sandboxer/services/postgres"

	"github.com/docker/docker/client"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/testenv"
)

// The test image matrix (images/variants, built by `make test-images`):
// local images changed the way real users' images differ.
func variantImage(name string) string { return "sandboxer.local/variant:" + name }

// newVariantProvider is a provider whose service runs the variant image,
// failing (not skipping) when the engine is there but the variant is not.
func newVariantProvider(t *testing.T, service, variant string, modules map[string]string) *Provider {
	t.Helper()
	requireImages(t)
	testenv.RequireDocker(t)
	ref := variantImage(variant)
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.ImageInspect(context.Background(), ref); err != nil {
		t.Fatalf("variant image %q is not available (%v): run `make test-images`", ref, err)
	}
	cfg := testConfig()
	cfg.Images[service] = config.Image{Ref: ref, Modules: modules}
	p, err := New(context.Background(), cfg, config.DefaultCatalog())
	if err != nil {
		t.Fatal(err)
	}
	secrets := &secretLog{}
	p.onSecrets = secrets.record
	p.ReadyTimeout = loadedReadyTimeout
	p.ProbeTimeout = 30 * time.Second
	t.Cleanup(func() { p.Close() })
	return p
}

// execOutput runs cmd in a container as root and returns its output.
func execOutput(t *testing.T, p *Provider, id string, cmd ...string) string {
	t.Helper()
	var out strings.Builder
	if err := p.execIn(context.Background(), id, "root", cmd, &out); err != nil {
		t.Fatalf("%s: %v", strings.Join(cmd, " "), err)
	}
	return strings.TrimSpace(out.String())
}

// An image whose postgres user is uid 70 (the Alpine images) runs with
// TLS: the key, the password file and the init script belong to uid 70,
// read from the image, and the server accepts the key (it refuses one
// owned by another user).
func TestVariantPostgresUID70TLS(t *testing.T) {
	t.Parallel()
	p := newVariantProvider(t, "postgres", "postgres-uid70", nil)
	p.CADir = t.TempDir()
	lineage := newLineage(t, p)
	ctx := context.Background()
	caps, err := p.Check(ctx, uses("postgres"))
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	ii, err := p.inspectImage(ctx, "postgres", variantImage("postgres-uid70"))
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := p.caps.Get(p.capabilityKey("postgres", p.cfg.Images["postgres"], ii.ID)); !ok || f.Owner != (fileOwner{70, 70}) {
		t.Errorf("inspection found owner %+v (cached %v), want uid/gid 70", f.Owner, ok)
	}
	if _, ok := caps[use("postgres")].Features["vector"]; !ok {
		t.Errorf("capabilities lost the image's extensions: %v", caps[use("postgres")].Features)
	}
	req := apply.CreateRequest{Address: "sandbox.uid70", Lineage: lineage, Generation: 1,
		Features: config.FeatureSet{"postgres": {"vector"}},
		Publish:  config.Publish{Address: loopback, AdvertiseHost: loopback, TLS: true}}
	created, err := p.Create(ctx, req)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	rec := recordFor(req, created)
	id := created.Resources.Containers["postgres"]
	files := []string{secretPath(tlsKeyName), secretPath(pgPasswordFile), pgsvc.InitDir + "/" + pgsvc.InitScriptName}
	if ci, err := p.cli.ContainerInspect(ctx, id); err == nil && mountsTemplate(ci.Mounts) {
		// Started from a template: the passwords' verifiers and the start
		// script instead (pgfromtemplate.go); the server runs as uid 70.
		files = []string{secretPath(tlsKeyName), secretPath("pg-session-1.sql"), secretPath(templateStartScript)}
		if ci.Config.User != "70:70" {
			t.Errorf("a sandbox from a template runs as %q, want the image's postgres user 70:70", ci.Config.User)
		}
	}
	got := execOutput(t, p, id, append([]string{"stat", "-c", "%n %u:%g"}, files...)...)
	for _, line := range strings.Split(got, "\n") {
		if !strings.HasSuffix(line, " 70:70") {
			t.Errorf("copied file not owned by the image's postgres user (70:70): %s", line)
		}
	}
	pg := created.Credentials["postgres"]
	if pg.CA == "" {
		t.Fatal("no CA handed out for a TLS sandbox")
	}
	if err := p.Probe(ctx, rec); err != nil {
		t.Errorf("Probe over TLS: %v", err)
	}
	if err := p.Delete(ctx, rec); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	assertNothingLabelled(t, p, lineage)
}

// An image with the PostgreSQL 18 layout (PGDATA below the declared VOLUME
// /var/lib/postgresql) keeps its data where storage says, mounted at the
// VOLUME path: the labelled volume by default (no tmpfs hides it), one
// tmpfs with storage = "tmpfs"; nothing unlabelled is made either way.
func TestVariantPostgres18Layout(t *testing.T) {
	t.Parallel()
	for _, storage := range []string{config.StorageVolume, config.StorageTmpfs} {
		t.Run(storage, func(t *testing.T) {
			t.Parallel()
			p := newVariantProvider(t, "postgres", "postgres-18layout", nil)
			p.cfg.Storage = storage
			lineage := newLineage(t, p)
			ctx := context.Background()
			req := apply.CreateRequest{Address: "sandbox.pg18", Lineage: lineage, Generation: 1,
				Features: config.FeatureSet{"postgres": {"pg_trgm"}}}
			created, err := p.Create(ctx, req)
			if err != nil {
				t.Fatalf("Create: %v", err)
			}
			rec := recordFor(req, created)
			id := created.Resources.Containers["postgres"]
			ci, err := p.cli.ContainerInspect(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			var volumes []string
			fromTemplate := mountsTemplate(ci.Mounts)
			for _, m := range ci.Mounts {
				if m.Type != "volume" || m.Destination == pgsvc.TemplateMount {
					continue // the template is checked by pgtemplate_test.go
				}
				volumes = append(volumes, m.Destination)
				v, err := p.cli.VolumeInspect(ctx, m.Name)
				if err != nil {
					t.Fatal(err)
				}
				if v.Labels[LabelLineage] != lineage {
					t.Errorf("volume %s at %s is not labelled with the lineage: %v", m.Name, m.Destination, v.Labels)
				}
			}
			wantTmpfs, wantVolumes := map[string]string{}, []string{"/var/lib/postgresql"}
			if storage == config.StorageTmpfs {
				wantTmpfs, wantVolumes = map[string]string{"/var/lib/postgresql": ""}, nil
				if fromTemplate {
					// The service user owns it: the start script copies
					// the template into it as that user.
					wantTmpfs["/var/lib/postgresql"] = "uid=999,gid=999,mode=0700"
				}
			}
			if diff := cmp.Diff(wantTmpfs, ci.HostConfig.Tmpfs, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("tmpfs mounts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantVolumes, volumes); diff != "" {
				t.Errorf("volumes (-want +got):\n%s", diff)
			}
			// The server runs on the image's PGDATA, on that mount.
			// As the server's user: root in a container that runs as
			// another user (a sandbox from a template) has no capability
			// to read its 0700 directory.
			var out strings.Builder
			if err := p.execIn(ctx, id, pgsvc.OSUser, []string{"sh", "-c", `cat "$PGDATA/PG_VERSION" && stat -c %m "$PGDATA/PG_VERSION"`}, &out); err != nil {
				t.Fatal(err)
			}
			got := strings.TrimSpace(out.String())
			if lines := strings.Split(got, "\n"); len(lines) != 2 || lines[1] != "/var/lib/postgresql" {
				t.Errorf("PGDATA/PG_VERSION and its mount point: %q, want a version on /var/lib/postgresql", got)
			}
			pg := created.Credentials["postgres"]
			if err := pgsvc.Ping(ctx, pg.Host, pg.Port, pg.User, pg.Password, pg.Database, nil); err != nil {
				t.Errorf("app role: %v", err)
			}
			if err := p.Delete(ctx, rec); err != nil {
				t.Fatalf("Delete: %v", err)
			}
			assertNothingLabelled(t, p, lineage)
		})
	}
}

// A redis image whose entrypoint loads the search module by itself (as
// redis:8's does) works with the module path configured as well: the
// inspection sees the module loaded without a --loadmodule, so Create adds
// none (a second load would abort start-up).
func TestVariantRedisSelfLoadedModule(t *testing.T) {
	t.Parallel()
	p := newVariantProvider(t, "redis", "redis-autoload", map[string]string{"search": testRedisSearchModule()})
	lineage := newLineage(t, p)
	ctx := context.Background()
	caps, err := p.Check(ctx, uses("redis"))
	if err != nil {
		t.Fatalf("Check: %v", err)
	}
	if _, ok := caps[use("redis")].Features["search"]; !ok {
		t.Fatalf("search not provided: %+v", caps[use("redis")])
	}
	req := apply.CreateRequest{Address: "sandbox.autoload", Lineage: lineage, Generation: 1,
		Features: config.FeatureSet{"redis": {"search"}}}
	created, err := p.Create(ctx, req)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	rec := recordFor(req, created)
	ci, err := p.cli.ContainerInspect(ctx, created.Resources.Containers["redis"])
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(ci.Config.Cmd, "--loadmodule") {
		t.Errorf("sandboxer loaded a module the image loads itself: %v", ci.Config.Cmd)
	}
	if !slices.Contains(created.AvailableExtensions["redis"], "search") {
		t.Errorf("available: %v", created.AvailableExtensions)
	}
	if err := p.Delete(ctx, rec); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	assertNothingLabelled(t, p, lineage)
}
