package docker

import (
	"archive/tar"
	"context"
	"encoding/json"
	"io"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	pgsvc "github.com/sandboxer/sandboxer/services/postgres"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
)

func TestInitScript(t *testing.T) {
	c := state.Credentials{User: "app", Password: "app-pw", AdminUser: "sbx_admin", AdminPassword: "admin-pw", Database: "app"}
	const verifier = "SCRAM-SHA-256$4096:c2FsdA==$c3RvcmVk:c2VydmVy"
	got := string(pgsvc.InitScript(c, verifier, []string{"vector", "uuid-ossp"}, []string{"uuid-ossp", "vector", "it's"}))
	for _, want := range []string{
		`CREATE ROLE "app" LOGIN PASSWORD '` + verifier + `' NOSUPERUSER NOCREATEROLE CREATEDB NOREPLICATION NOBYPASSRLS;`,
		`CREATE DATABASE "app" OWNER "app" TEMPLATE template1 STRATEGY = FILE_COPY;`,
		"\n\\connect template1\n",
		"\n\\connect postgres\n",
		`ARRAY['vector', 'uuid-ossp']::text[]`,
		`ARRAY['uuid-ossp', 'vector', 'it''s']::text[]`,
		"format('CREATE EXTENSION IF NOT EXISTS %I', ext)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("init script lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "app-pw") || strings.Contains(got, "admin-pw") {
		t.Errorf("init script holds a clear-text password:\n%s", got)
	}
	// The role first; the extensions go into template1, and the app
	// database is copied from it afterwards, so it and every database the
	// role creates have them.
	r, tp, e := strings.Index(got, "CREATE ROLE"), strings.Index(got, "\\connect template1"), strings.Index(got, "DO $sandboxer$")
	back, d := strings.Index(got, "\\connect postgres"), strings.Index(got, "CREATE DATABASE")
	if !(r < tp && tp < e && e < back && back < d) {
		t.Errorf("statements out of order:\n%s", got)
	}

	none := string(pgsvc.InitScript(c, verifier, nil, []string{"vector"}))
	if strings.Contains(none, "\\connect") || strings.Contains(none, "EXTENSION") {
		t.Errorf("init script without extensions still switches database or creates one:\n%s", none)
	}
}

// An extension with a dependency takes the init script's careful path
// (CREATE EXTENSION … CASCADE after the allowlist check) during a real
// first start.
func TestCreateExtensionWithDependency(t *testing.T) {
	t.Parallel()
	p, secrets := newTestProvider(t)
	lineage := newLineage(t, p)
	req := apply.CreateRequest{
		Address: "sandbox.geo", Lineage: lineage, Generation: 1,
		Features: config.FeatureSet{"postgres": {"earthdistance"}},
	}
	created, err := p.Create(context.Background(), req)
	secrets.assertClean(t, err)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	pg := created.Credentials["postgres"]
	checkExtensionsCreatedByAdmin(t, pg, []string{"earthdistance", "cube"})

	// A restart empties the tmpfs data directory; the init script sets the
	// sandbox up again with the same role, password and extensions (the
	// engine picks a new host port).
	id := created.Resources.Containers["postgres"]
	if err := p.cli.ContainerRestart(context.Background(), id, container.StopOptions{}); err != nil {
		t.Fatal(err)
	}
	ci, err := p.cli.ContainerInspect(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	pg.Port, _ = strconv.Atoi(ci.NetworkSettings.Ports[postgresPort][0].HostPort)
	err = p.waitReady(context.Background(), id, time.Minute, func(ctx context.Context) error {
		return pgsvc.Ping(ctx, pg.Host, pg.Port, pg.User, pg.Password, pg.Database, nil)
	})
	if err != nil {
		t.Fatalf("app role after a restart: %v", err)
	}
	checkExtensionsCreatedByAdmin(t, pg, []string{"earthdistance", "cube"})

	if err := p.Delete(context.Background(), recordFor(req, created)); err != nil {
		t.Fatal(err)
	}
	assertNothingLabelled(t, p, lineage)
}

// checkExtensionsCreatedByAdmin asserts, as the app role, that each
// extension exists in the app database and belongs to the admin (created in
// the init phase, not by the handed-out role), and, as the admin, that it
// was not created in the postgres database instead.
func checkExtensionsCreatedByAdmin(t *testing.T, pg state.Credentials, exts []string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgsvc.Connect(ctx, pg.Host, pg.Port, pg.User, pg.Password, pg.Database, nil)
	if err != nil {
		t.Fatalf("connect as app: %v", err)
	}
	defer conn.Close(ctx)
	owners := map[string]string{}
	rows, _ := conn.Query(ctx, "SELECT extname::text, pg_get_userbyid(extowner)::text FROM pg_extension")
	var name, owner string
	if _, err := pgx.ForEachRow(rows, []any{&name, &owner}, func() error { owners[name] = owner; return nil }); err != nil {
		t.Fatal(err)
	}
	for _, ext := range exts {
		if owners[ext] != pg.AdminUser {
			t.Errorf("extension %q in %q: owner %q, want the admin %q (installed: %v)", ext, pg.Database, owners[ext], pg.AdminUser, owners)
		}
	}

	admin, err := pgsvc.Connect(ctx, pg.Host, pg.Port, pg.AdminUser, pg.AdminPassword, "postgres", nil)
	if err != nil {
		t.Fatalf("connect as admin: %v", err)
	}
	defer admin.Close(ctx)
	var elsewhere []string
	if err := admin.QueryRow(ctx, "SELECT ARRAY(SELECT extname::text FROM pg_extension)").Scan(&elsewhere); err != nil {
		t.Fatal(err)
	}
	for _, ext := range exts {
		if slices.Contains(elsewhere, ext) {
			t.Errorf("extension %q was also created in the postgres database", ext)
		}
	}
}

// checkInitScriptFile reads the init script back from the container: it
// must hold the app role's SCRAM verifier and no password of the instance.
func checkInitScriptFile(t *testing.T, p *Provider, id string, creds map[string]state.Credentials) {
	t.Helper()
	rc, _, err := p.cli.CopyFromContainer(context.Background(), id, path.Join(pgsvc.InitDir, pgsvc.InitScriptName))
	if err != nil {
		t.Fatalf("read init script: %v", err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	if _, err := tr.Next(); err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(tr)
	if err != nil {
		t.Fatal(err)
	}
	script := string(body)
	if !strings.Contains(script, "PASSWORD 'SCRAM-SHA-256$4096:") {
		t.Errorf("init script does not set a SCRAM verifier:\n%s", script)
	}
	for svc, c := range creds {
		if strings.Contains(script, c.Password.Reveal()) || strings.Contains(script, c.AdminPassword.Reveal()) {
			t.Errorf("init script holds a %s password", svc)
		}
	}
}

// checkExtensionGuard runs the init script's extension block as the admin in
// a scratch database of a live sandbox: an extension whose dependency is off
// the allowlist must not be created (nor its dependency), one the image
// lacks is skipped without failing, and with the dependency allowed both are
// created.
func checkExtensionGuard(t *testing.T, pg state.Credentials) {
	t.Helper()
	ctx := context.Background()
	admin, err := pgsvc.Connect(ctx, pg.Host, pg.Port, pg.AdminUser, pg.AdminPassword, "postgres", nil)
	if err != nil {
		t.Fatalf("connect as admin: %v", err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE guard"); err != nil {
		t.Fatal(err)
	}
	conn, err := pgsvc.Connect(ctx, pg.Host, pg.Port, pg.AdminUser, pg.AdminPassword, "guard", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	installed := func() []string {
		var out []string
		if err := conn.QueryRow(ctx, "SELECT ARRAY(SELECT extname::text FROM pg_extension)").Scan(&out); err != nil {
			t.Fatal(err)
		}
		return out
	}

	// earthdistance requires cube, which this allowlist lacks.
	if _, err := conn.Exec(ctx, pgsvc.ExtensionsBlock([]string{"earthdistance"}, []string{"earthdistance"})); err != nil {
		t.Fatalf("extension block with a disallowed dependency: %v", err)
	}
	if got := installed(); slices.Contains(got, "earthdistance") || slices.Contains(got, "cube") {
		t.Errorf("installed %v although cube is not allowed", got)
	}

	if _, err := conn.Exec(ctx, pgsvc.ExtensionsBlock([]string{"no_such_extension", "earthdistance"}, []string{"cube", "earthdistance", "no_such_extension"})); err != nil {
		t.Fatalf("extension block with a missing extension: %v", err)
	}
	got := installed()
	if !slices.Contains(got, "earthdistance") || !slices.Contains(got, "cube") || slices.Contains(got, "no_such_extension") {
		t.Errorf("installed %v, want earthdistance and cube, no no_such_extension", got)
	}
}

func TestImageEnvTweaks(t *testing.T) {
	img := func(env ...string) image.InspectResponse {
		var ii image.InspectResponse
		b, _ := json.Marshal(map[string]any{"Config": map[string]any{"Env": env}})
		if err := json.Unmarshal(b, &ii); err != nil {
			t.Fatal(err)
		}
		return ii
	}
	const debianPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/lib/postgresql/17/bin"
	tests := []struct {
		name string
		ii   image.InspectResponse
		want []string
	}{
		{"debian layout", img(debianPath), []string{"TZ=Etc/UTC", "PATH=/usr/lib/postgresql/17/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}},
		{"already first", img("PATH=/usr/lib/postgresql/17/bin:/usr/bin"), []string{"TZ=Etc/UTC"}},
		{"no server dir", img("PATH=/usr/local/bin:/usr/bin"), []string{"TZ=Etc/UTC"}},
		{"image sets TZ", img(debianPath, "TZ=Europe/Berlin"), []string{"PATH=/usr/lib/postgresql/17/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}},
		{"no config", image.InspectResponse{}, []string{"TZ=Etc/UTC"}},
	}
	for _, tt := range tests {
		got := append(pgsvc.UTCUnlessSet(imageEnvOf(tt.ii)), pgsvc.ServerBinFirst(imageEnvOf(tt.ii))...)
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}

// TimescaleDB's scheduler holds a session in every database that has the
// extension, which makes template1 unusable as a template: it goes into
// the app database only, after the copy. Its launcher also visits
// template1 as the server starts, so the app database is copied from
// template0 and gets every extension itself.
func TestInitScriptTimescaleDBOutsideTemplate(t *testing.T) {
	c := state.Credentials{User: "app", Password: "p", AdminUser: "sbx_admin", AdminPassword: "a", Database: "shop"}
	got := string(pgsvc.InitScript(c, "v", []string{"timescaledb", "vector"}, []string{"timescaledb", "vector"}))
	tmpl, create, app := strings.Index(got, "\\connect template1"), strings.Index(got, "CREATE DATABASE"), strings.Index(got, "\\connect \"shop\"")
	if tmpl < 0 || create < 0 || app < 0 || !(tmpl < create && create < app) {
		t.Fatalf("want template1, then CREATE DATABASE, then \\connect \"shop\":\n%s", got)
	}
	if blk := got[tmpl:create]; !strings.Contains(blk, "FOREACH ext IN ARRAY ARRAY['vector']::text[]") {
		t.Errorf("template1 block must create vector and not timescaledb:\n%s", blk)
	}
	if blk := got[app:]; !strings.Contains(blk, "FOREACH ext IN ARRAY ARRAY['timescaledb', 'vector']::text[]") {
		t.Errorf("app database block must create timescaledb and vector:\n%s", blk)
	}
	if !strings.Contains(got, "TEMPLATE template0 STRATEGY") {
		t.Errorf("with timescaledb the app database must be copied from template0:\n%s", got)
	}
	plain := string(pgsvc.InitScript(c, "v", []string{"vector"}, []string{"timescaledb", "vector"}))
	if !strings.Contains(plain, "TEMPLATE template1 STRATEGY") {
		t.Errorf("without timescaledb the app database is copied from template1:\n%s", plain)
	}
}
