package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/docker/docker/api/types"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/image"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	pgsvc "github.com/sandboxer/sandboxer/services/postgres"
	"github.com/sandboxer/sandboxer/state"
)

// newTemplateProvider is a provider whose templates are the test's own
// (a salt in their key), all removed when the test ends.
func newTemplateProvider(t *testing.T, cfg *config.Provider) (*Provider, *secretLog) {
	t.Helper()
	requireImages(t)
	if cfg == nil {
		cfg = testConfig()
	}
	p, err := New(context.Background(), cfg, config.DefaultCatalog())
	if err != nil {
		t.Fatal(err)
	}
	secrets := &secretLog{}
	p.onSecrets = secrets.record
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	p.templateSalt = hex.EncodeToString(b)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		for _, v := range templateVolumes(t, p) {
			if err := p.cli.VolumeRemove(ctx, v.Name, true); err != nil {
				t.Errorf("remove template volume %s: %v", v.Name, err)
			}
		}
		p.Close()
	})
	return p, secrets
}

// templateVolumes lists the template volumes made with p's salt.
func templateVolumes(t *testing.T, p *Provider) []*volume.Volume {
	t.Helper()
	vs, err := p.cli.VolumeList(context.Background(), volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelTemplate))})
	if err != nil {
		t.Fatal(err)
	}
	var out []*volume.Volume
	for _, v := range vs.Volumes {
		if v.Labels[labelTemplateSalt] == p.templateSalt {
			out = append(out, v)
		}
	}
	return out
}

func pgOnly(addr, lineage string, gen int, feats ...string) apply.CreateRequest {
	if feats == nil {
		feats = []string{}
	}
	return apply.CreateRequest{Address: addr, Lineage: lineage, Generation: gen, Features: config.FeatureSet{"postgres": feats}}
}

// TestTemplateConcurrentFirstUse: eight first requests for one image at
// once make one template, and every sandbox works with its own
// credentials only.
func TestTemplateConcurrentFirstUse(t *testing.T) {
	p, secrets := newTemplateProvider(t, nil)
	lineage := newLineage(t, p)
	const n = 8
	ctx := context.Background()
	created := make([]*apply.Created, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			created[i], errs[i] = p.Create(ctx, pgOnly(fmt.Sprintf("sandbox.c%d", i), lineage, 1))
		}()
	}
	wg.Wait()
	t.Logf("%d concurrent first creates: %v", n, time.Since(start).Round(time.Millisecond))
	for i, err := range errs {
		secrets.assertClean(t, err)
		if err != nil {
			t.Fatalf("create %d: %v", i, err)
		}
	}
	if vs := templateVolumes(t, p); len(vs) != 1 {
		t.Errorf("%d template volumes after %d concurrent first creates, want 1", len(vs), n)
	}
	for i, c := range created {
		pg := c.Credentials["postgres"]
		if err := pgsvc.Ping(ctx, pg.Host, pg.Port, pg.User, pg.Password, pg.Database, nil); err != nil {
			t.Errorf("sandbox %d: app role: %v", i, err)
		}
		other := created[(i+1)%n].Credentials["postgres"]
		assertRefused(t, pg, pg.AdminUser, other.AdminPassword, "postgres")
		assertRefused(t, pg, pg.User, other.Password, pg.Database)
	}
	for i, c := range created {
		if err := p.Delete(ctx, recordFor(pgOnly(fmt.Sprintf("sandbox.c%d", i), lineage, 1), c)); err != nil {
			t.Error(err)
		}
	}
	assertNothingLabelled(t, p, lineage)
}

// assertRefused fails unless the server of c refuses user with password
// (it must answer: a refused connection proves nothing).
func assertRefused(t *testing.T, c state.Credentials, user string, password state.Secret, db string) {
	t.Helper()
	err := tryLogin(context.Background(), c.Port, user, password, db)
	if err == nil {
		t.Errorf("port %d accepted %s with another sandbox's or the template's password", c.Port, user)
		return
	}
	if !authRefused(err) {
		t.Errorf("login as %s: want an authentication failure, got %v", user, err)
	}
}

func tryLogin(ctx context.Context, port int, user string, password state.Secret, db string) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	conn, err := pgsvc.Connect(ctx, loopback, port, user, password, db, nil)
	if err != nil {
		return err
	}
	conn.Close(ctx)
	return nil
}

// authRefused reports an answer of the server that refuses the login
// (28P01 wrong password, 28000 no password or no such role).
func authRefused(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "28P01" || pe.Code == "28000")
}

// TestTemplateNoSharedCredential: from the moment a new sandbox's port
// answers, it refuses the template's throwaway password, an empty one,
// and another live sandbox's admin and app passwords, over many runs.
func TestTemplateNoSharedCredential(t *testing.T) {
	p, secrets := newTemplateProvider(t, nil)
	lineage := newLineage(t, p)
	ctx := context.Background()
	first := pgOnly("sandbox.first", lineage, 1)
	a, err := p.Create(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	other := a.Credentials["postgres"]
	secrets.mu.Lock()
	known := append([]string{}, secrets.secrets...) // the template's throwaway among them
	secrets.mu.Unlock()
	const runs = 6
	answered, attempts := 0, 0
	for run := 1; run <= runs; run++ {
		req := pgOnly("sandbox.fresh", lineage, run)
		name := containerName(lineage, req.Address, run, "postgres")
		done := make(chan struct{})
		var created *apply.Created
		var cerr error
		go func() {
			defer close(done)
			created, cerr = p.Create(ctx, req)
		}()
		port := 0
		tryAll := func() {
			for _, pw := range append([]string{""}, known...) {
				for _, user := range []string{other.AdminUser, other.User, "postgres"} {
					attempts++
					err := tryLogin(ctx, port, user, state.Secret(pw), "postgres")
					if err == nil {
						t.Fatalf("run %d: the fresh sandbox accepted %s with a password not its own", run, user)
					}
					if authRefused(err) {
						answered++
					}
				}
			}
		}
	poll:
		for {
			select {
			case <-done:
				break poll
			default:
			}
			if port == 0 {
				if ci, err := p.cli.ContainerInspect(ctx, name); err == nil && ci.NetworkSettings != nil {
					for _, b := range ci.NetworkSettings.Ports[postgresPort] {
						fmt.Sscan(b.HostPort, &port)
					}
				}
				if port == 0 {
					time.Sleep(5 * time.Millisecond)
					continue
				}
			}
			tryAll()
		}
		secrets.assertClean(t, cerr)
		if cerr != nil {
			t.Fatalf("run %d: %v", run, cerr)
		}
		fresh := created.Credentials["postgres"]
		port = fresh.Port
		tryAll() // the server answers now, for certain
		if err := tryLogin(ctx, fresh.Port, fresh.AdminUser, fresh.AdminPassword, "postgres"); err != nil {
			t.Errorf("run %d: own admin: %v", run, err)
		}
		if err := p.Delete(ctx, recordFor(req, created)); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d login attempts with foreign passwords, %d refused by the server itself, none accepted", attempts, answered)
	if answered == 0 {
		t.Fatal("no attempt reached a server: the check is vacuous")
	}
	if err := p.Delete(ctx, recordFor(first, a)); err != nil {
		t.Fatal(err)
	}
	assertNothingLabelled(t, p, lineage)
}

// TestTemplateRebuilt: a template volume removed by hand, a half-made one
// (a crashed builder's: labelled, empty) and a damaged one (its marker
// gone) are each detected and replaced by a new build; none is started.
func TestTemplateRebuilt(t *testing.T) {
	p, _ := newTemplateProvider(t, nil)
	lineage := newLineage(t, p)
	ctx := context.Background()
	gen := 0
	create := func(what string) string {
		t.Helper()
		gen++
		req := pgOnly("sandbox.re", lineage, gen)
		c, err := p.Create(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		pg := c.Credentials["postgres"]
		if err := pgsvc.Ping(ctx, pg.Host, pg.Port, pg.User, pg.Password, pg.Database, nil); err != nil {
			t.Errorf("%s: %v", what, err)
		}
		if err := p.Delete(ctx, recordFor(req, c)); err != nil {
			t.Fatal(err)
		}
		// The newest volume is the template; an older complete one
		// may remain until CollectTemplates; a removed or damaged one
		// not in use is gone.
		var newest *volume.Volume
		for _, v := range templateVolumes(t, p) {
			if v.Labels[labelTemplateBuild] == "halfmade" {
				t.Errorf("%s: the half-made template is still there", what)
			}
			if newest == nil || v.CreatedAt > newest.CreatedAt {
				newest = v
			}
		}
		if newest == nil {
			t.Fatalf("%s: no template volume", what)
		}
		return newest.Labels[labelTemplateBuild]
	}
	build1 := create("first use")
	tpl := templateVolumes(t, p)[0]
	if n := len(templateVolumes(t, p)); n != 1 {
		t.Fatalf("%d template volumes after the first use, want 1", n)
	}

	// Removed by hand.
	if err := p.cli.VolumeRemove(ctx, tpl.Name, false); err != nil {
		t.Fatal(err)
	}
	build2 := create("after removal by hand")
	if build2 == build1 {
		t.Fatal("no new build after the template was removed")
	}

	// Damaged: the marker written last is gone.
	tpl = templateVolumes(t, p)[0]
	if n := len(templateVolumes(t, p)); n != 1 {
		t.Fatalf("%d template volumes after a rebuild, want 1", n)
	}
	runInVolume(t, p, tpl.Name, "rm", pgsvc.TemplateData+"/"+pgsvc.TemplateMarker)
	build3 := create("after damage")
	if build3 == build2 {
		t.Fatal("a damaged template was used")
	}
	if n := len(templateVolumes(t, p)); n != 1 {
		t.Fatalf("%d template volumes after the damaged one was rebuilt, want 1", n)
	}

	// Half-made: a newer labelled volume with nothing in it, as a builder
	// killed after creating it leaves.
	tpl = templateVolumes(t, p)[0]
	labels := map[string]string{}
	for k, v := range tpl.Labels {
		labels[k] = v
	}
	labels[labelTemplateBuild] = "halfmade"
	time.Sleep(1100 * time.Millisecond) // the engine's creation times have seconds
	if _, err := p.cli.VolumeCreate(ctx, volume.CreateOptions{Name: tpl.Name + "-halfmade", Labels: labels}); err != nil {
		t.Fatal(err)
	}
	build4 := create("after a half-made build")
	if build4 == "halfmade" || build4 == build3 {
		t.Fatalf("build after a half-made one: %q", build4)
	}
	assertNothingLabelled(t, p, lineage)
}

// runInVolume runs cmd in a container of the postgres test image with
// volume mounted at pgsvc.TemplateMount, as root, and removes it.
func runInVolume(t *testing.T, p *Provider, vol string, cmd ...string) {
	t.Helper()
	ctx := context.Background()
	resp, err := p.cli.ContainerCreate(ctx, &container.Config{Image: testPostgresImage(), Entrypoint: cmd, User: "0"},
		&container.HostConfig{NetworkMode: "none", Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: vol, Target: pgsvc.TemplateMount}}},
		nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	defer p.cli.ContainerRemove(ctx, resp.ID, container.RemoveOptions{Force: true})
	if err := p.cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	ok, errc := p.cli.ContainerWait(ctx, resp.ID, container.WaitConditionNotRunning)
	select {
	case r := <-ok:
		if r.StatusCode != 0 {
			t.Fatalf("%v: exit %d", cmd, r.StatusCode)
		}
	case err := <-errc:
		t.Fatal(err)
	}
}

// TestTemplateNewImageSameTag: an image rebuilt under the same tag gets a
// template of its own; the old one is not used.
func TestTemplateNewImageSameTag(t *testing.T) {
	requireImages(t)
	b := make([]byte, 6)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	tag := variantImage("tpl-" + hex.EncodeToString(b))
	cfg := testConfig()
	cfg.Images["postgres"] = config.Image{Ref: tag}
	p, _ := newTemplateProvider(t, cfg)
	ctx := context.Background()
	var ids []string
	t.Cleanup(func() {
		for _, id := range ids {
			p.cli.ImageRemove(context.Background(), id, image.RemoveOptions{Force: true, PruneChildren: true})
		}
	})
	lineage := newLineage(t, p)
	for gen := 1; gen <= 2; gen++ {
		id := buildVariant(t, p, tag, fmt.Sprintf("LABEL dev.sandboxer.test-build=%d-%s\n", gen, hex.EncodeToString(b)))
		ids = append(ids, id)
		req := apply.CreateRequest{Address: "sandbox.img", Lineage: lineage, Generation: gen,
			Features: config.FeatureSet{"postgres": {}}, Images: map[string]string{"postgres": tag}}
		c, err := p.Create(ctx, req)
		if err != nil {
			t.Fatalf("image build %d: %v", gen, err)
		}
		if err := p.Delete(ctx, recordFor(req, c)); err != nil {
			t.Fatal(err)
		}
		vs := templateVolumes(t, p)
		var mine int
		for _, v := range vs {
			if v.Labels[labelTemplateImage] == id {
				mine++
			}
		}
		if mine != 1 || len(vs) != gen {
			t.Fatalf("after image build %d: %d templates in all, %d of this image; want %d and 1", gen, len(vs), mine, gen)
		}
	}
	if ids[0] == ids[1] {
		t.Fatal("the two builds made one image")
	}
	// reap's collection: the first build's template is no configured
	// image's any more; the current one stays.
	removed, err := p.CollectTemplates(ctx, []string{tag})
	if err != nil {
		t.Fatal(err)
	}
	vs := templateVolumes(t, p)
	if len(removed) != 1 || len(vs) != 1 || vs[0].Labels[labelTemplateImage] != ids[1] {
		t.Errorf("collect: removed %v, left %d template(s)", removed, len(vs))
	}
	if removed, err := p.CollectTemplates(ctx, nil); err != nil || len(removed) != 1 {
		t.Errorf("collect with no image configured: removed %v, %v", removed, err)
	}
	assertNothingLabelled(t, p, lineage)
}

// buildVariant builds FROM the postgres test image plus extra under tag
// and returns the image ID.
func buildVariant(t *testing.T, p *Provider, tag, extra string) string {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	df := []byte("FROM " + testPostgresImage() + "\n" + extra)
	tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(df))})
	tw.Write(df)
	tw.Close()
	resp, err := p.cli.ImageBuild(context.Background(), &buf, types.ImageBuildOptions{Tags: []string{tag}, Remove: true, Version: types.BuilderV1})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(out), `"error"`) {
		t.Fatalf("build %s: %s", tag, out)
	}
	ii, err := p.cli.ImageInspect(context.Background(), tag)
	if err != nil {
		t.Fatal(err)
	}
	return ii.ID
}

// TestTemplateIndistinguishable: a sandbox started from a template and
// one initialised from scratch look the same to a client: settings (SHOW
// ALL), roles and their attributes, databases, privileges, extensions,
// host-based authentication rules.
func TestTemplateIndistinguishable(t *testing.T) {
	ctx := context.Background()
	feats := []string{"pg_trgm", "vector"}
	tp, _ := newTemplateProvider(t, nil)
	scratchCfg := testConfig()
	scratchCfg.NoTemplate = true
	sp, err := New(ctx, scratchCfg, config.DefaultCatalog())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sp.Close() })
	views := map[string]map[string][]string{}
	for _, side := range []struct {
		name string
		p    *Provider
	}{{"template", tp}, {"scratch", sp}} {
		lineage := newLineage(t, side.p)
		req := pgOnly("sandbox.same", lineage, 1, feats...)
		c, err := side.p.Create(ctx, req)
		if err != nil {
			t.Fatalf("%s: %v", side.name, err)
		}
		views[side.name] = clientView(t, c.Credentials["postgres"])
		if side.name == "template" {
			ci, err := side.p.cli.ContainerInspect(ctx, c.Resources.Containers["postgres"])
			if err != nil {
				t.Fatal(err)
			}
			if !mountsTemplate(ci.Mounts) {
				t.Fatal("the template side did not start from a template")
			}
		}
		if err := side.p.Delete(ctx, recordFor(req, c)); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{"SHOW ALL (app role)", "roles", "databases", "hba rules", "extensions in app"} {
		if len(views["scratch"][q]) == 0 || len(views["template"][q]) == 0 {
			t.Fatalf("%s: no rows to compare", q)
		}
	}
	for _, q := range slices.Sorted(maps.Keys(views["scratch"])) {
		if d := cmpLines(views["scratch"][q], views["template"][q]); d != "" {
			t.Errorf("%s differs (- scratch, + template):\n%s", q, d)
		}
	}
}

func mountsTemplate(ms []container.MountPoint) bool {
	for _, m := range ms {
		if m.Destination == pgsvc.TemplateMount {
			return true
		}
	}
	return false
}

// clientView is what clients can see of a sandbox, one query → rows.
func clientView(t *testing.T, pg state.Credentials) map[string][]string {
	t.Helper()
	ctx := context.Background()
	out := map[string][]string{}
	run := func(user string, pw state.Secret, db, name, q string) {
		conn, err := pgsvc.Connect(ctx, pg.Host, pg.Port, user, pw, db, nil)
		if err != nil {
			t.Fatalf("%s: connect as %s: %v", name, user, err)
		}
		defer conn.Close(ctx)
		rows, err := conn.Query(ctx, "SELECT row_to_json(x)::text FROM ("+q+") x ORDER BY 1")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out[name] = append(out[name], s)
		}
		if err := rows.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	run(pg.User, pg.Password, pg.Database, "SHOW ALL (app role)", "SELECT name, setting FROM pg_settings")
	run(pg.AdminUser, pg.AdminPassword, "postgres", "pg_settings sources (admin)", "SELECT name, setting, source, sourcefile IS NOT NULL AS infile FROM pg_settings")
	run(pg.AdminUser, pg.AdminPassword, "postgres", "roles", `SELECT rolname, rolsuper, rolinherit, rolcreaterole, rolcreatedb,
		rolcanlogin, rolreplication, rolbypassrls, rolconnlimit, rolvaliduntil, split_part(rolpassword, ':', 1) AS scram
		FROM pg_authid`)
	run(pg.AdminUser, pg.AdminPassword, "postgres", "role settings", `SELECT setdatabase, pg_get_userbyid(setrole) r,
		setconfig FROM pg_db_role_setting`)
	run(pg.AdminUser, pg.AdminPassword, "postgres", "role memberships", `SELECT pg_get_userbyid(roleid) r, pg_get_userbyid(member) m,
		admin_option FROM pg_auth_members`)
	run(pg.AdminUser, pg.AdminPassword, "postgres", "databases", `SELECT datname, pg_get_userbyid(datdba) AS owner,
		pg_encoding_to_char(encoding) AS enc, datlocprovider, datcollate, datctype, datistemplate, datallowconn, datconnlimit,
		datacl::text FROM pg_database`)
	run(pg.AdminUser, pg.AdminPassword, "postgres", "hba rules", `SELECT type, database, user_name, address, netmask,
		auth_method, options, error FROM pg_hba_file_rules`)
	for _, db := range []string{pg.Database, "template1", "postgres"} {
		run(pg.AdminUser, pg.AdminPassword, db, "extensions in "+db, `SELECT extname, pg_get_userbyid(extowner) AS owner,
			extversion, extrelocatable FROM pg_extension`)
		run(pg.AdminUser, pg.AdminPassword, db, "schemas in "+db, `SELECT nspname, pg_get_userbyid(nspowner) AS owner,
			nspacl::text FROM pg_namespace`)
		run(pg.AdminUser, pg.AdminPassword, db, "default privileges in "+db, `SELECT pg_get_userbyid(defaclrole) r,
			defaclobjtype, defaclacl::text FROM pg_default_acl`)
		run(pg.AdminUser, pg.AdminPassword, db, "relations in "+db, `SELECT n.nspname, c.relname, c.relkind,
			pg_get_userbyid(c.relowner) o, c.relacl::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
			WHERE n.nspname NOT IN ('pg_catalog', 'information_schema', 'pg_toast')`)
	}
	run(pg.User, pg.Password, pg.Database, "app role privileges", `SELECT d.datname,
		has_database_privilege(d.datname, 'CREATE') c, has_database_privilege(d.datname, 'CONNECT') cn,
		has_database_privilege(d.datname, 'TEMP') tmp FROM pg_database d`)
	return out
}

// cmpLines is a line diff of two sorted row lists, "" when equal.
func cmpLines(a, b []string) string {
	in := func(xs []string) map[string]bool {
		m := map[string]bool{}
		for _, x := range xs {
			m[x] = true
		}
		return m
	}
	ina, inb := in(a), in(b)
	var d strings.Builder
	for _, x := range a {
		if !inb[x] {
			d.WriteString("- " + x + "\n")
		}
	}
	for _, x := range b {
		if !ina[x] {
			d.WriteString("+ " + x + "\n")
		}
	}
	return d.String()
}
