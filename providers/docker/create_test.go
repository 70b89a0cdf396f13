package docker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	redissvc "github.com/sandboxer/sandboxer/services/redis"

	pgsvc "github.com/sandboxer/sandboxer/services/postgres"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
)

// TestCreatePostgresRedis creates one postgres[vector] + redis[search]
// instance and runs every read-only assertion against it, then the
// destructive ones (container removed by hand, Delete, Delete again).
func TestCreatePostgresRedis(t *testing.T) {
	t.Parallel()
	p, secrets := newTestProvider(t)
	// The container spec of a sandbox initialised from scratch (its init
	// script, its mounts); one started from a template is checked by
	// pgtemplate_test.go, and indistinguishable to a client.
	p.cfg.NoTemplate = true
	lineage := newLineage(t, p)
	ctx := context.Background()
	req := apply.CreateRequest{
		Address:    `sandbox.it["shared"]`,
		Lineage:    lineage,
		Generation: 1,
		Features:   config.FeatureSet{"postgres": {"vector"}, "redis": {"search"}},
	}
	start := time.Now()
	created, err := p.Create(ctx, req)
	secrets.assertClean(t, err)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	t.Logf("create postgres[vector]+redis[search]: %s", time.Since(start).Round(time.Millisecond))
	rec := recordFor(req, created)
	pg, rd := created.Credentials["postgres"], created.Credentials["redis"]

	t.Run("credentials", func(t *testing.T) {
		for svc, c := range created.Credentials {
			if c.Host != "127.0.0.1" || c.Port == 0 || c.User == "" || c.Password == "" {
				t.Errorf("%s: incomplete credentials: host=%s port=%d user=%s", svc, c.Host, c.Port, c.User)
			}
			if c.AdminUser == c.User || c.AdminPassword == c.Password || c.AdminPassword == "" {
				t.Errorf("%s: admin and app credentials are not distinct", svc)
			}
		}
		if pg.Database == "" {
			t.Error("postgres: no database")
		}
		if pg.Password == rd.Password {
			t.Error("postgres and redis share a password")
		}
		for _, want := range []string{"vector", "postgis", "pg_trgm", "uuid-ossp"} {
			if !slices.Contains(created.AvailableExtensions["postgres"], want) {
				t.Errorf("available postgres extensions %v lack %q", created.AvailableExtensions["postgres"], want)
			}
		}
		for _, never := range []string{"plpython3u", "file_fdw", "dblink", "plpgsql"} {
			if slices.Contains(created.AvailableExtensions["postgres"], never) {
				t.Errorf("available postgres extensions list %q", never)
			}
		}
		if !slices.IsSorted(created.AvailableExtensions["postgres"]) {
			t.Error("available postgres extensions are not sorted")
		}
		if !slices.Contains(created.AvailableExtensions["redis"], "search") {
			t.Errorf("available redis features %v lack search", created.AvailableExtensions["redis"])
		}
		// Versions come with every available extension: RediSearch 1.2
		// and 2.x take different commands.
		for svc, avail := range created.AvailableExtensions {
			for _, ext := range avail {
				if _, ok := created.ExtensionVersions[svc][ext]; !ok {
					t.Errorf("%s %s: no version recorded", svc, ext)
				}
			}
		}
		if v := created.ExtensionVersions["postgres"]["vector"]; v == "" {
			t.Errorf("vector version missing: %v", created.ExtensionVersions["postgres"])
		}
		if v := created.ExtensionVersions["redis"]["search"]; v == "" {
			t.Errorf("search version missing: %v", created.ExtensionVersions["redis"])
		}
	})

	t.Run("probe", func(t *testing.T) {
		if err := p.Probe(ctx, rec); err != nil {
			t.Fatalf("Probe: %v", err)
		}
	})

	t.Run("postgres app role", func(t *testing.T) {
		conn, err := pgsvc.Connect(ctx, pg.Host, pg.Port, pg.User, pg.Password, pg.Database, nil)
		if err != nil {
			t.Fatalf("connect as app: %v", err)
		}
		defer conn.Close(ctx)
		var super, createRole, createDB bool
		if err := conn.QueryRow(ctx, "SELECT rolsuper, rolcreaterole, rolcreatedb FROM pg_roles WHERE rolname = current_user").
			Scan(&super, &createRole, &createDB); err != nil {
			t.Fatal(err)
		}
		// CREATEDB lets test frameworks make their own databases
		// (Django, Rails, Prisma); superuser and CREATEROLE stay off.
		if super || createRole || !createDB {
			t.Errorf("app role: superuser=%v createrole=%v createdb=%v, want false, false, true", super, createRole, createDB)
		}
		var owner string
		if err := conn.QueryRow(ctx, "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = current_database()").Scan(&owner); err != nil {
			t.Fatal(err)
		}
		if owner != pg.User {
			t.Errorf("database owner %q, want %q", owner, pg.User)
		}
		// Untrusted extensions need a superuser, whatever the allowlist says.
		for _, ext := range []string{"postgis", "file_fdw"} {
			_, err := conn.Exec(ctx, fmt.Sprintf("CREATE EXTENSION %q", ext))
			wantSQLState(t, err, "42501", "CREATE EXTENSION "+ext)
		}
		_, err = conn.Exec(ctx, "ALTER ROLE "+pg.User+" SUPERUSER")
		wantSQLState(t, err, "42501", "ALTER ROLE SUPERUSER")
		_, err = conn.Exec(ctx, "COPY (SELECT 1) TO PROGRAM 'true'")
		wantSQLState(t, err, "42501", "COPY TO PROGRAM")
		// The requested extension is there and usable by the app role.
		for _, q := range []string{
			"CREATE TABLE items (id bigserial PRIMARY KEY, embedding vector(3))",
			"INSERT INTO items (embedding) VALUES ('[1,2,3]'), ('[4,5,6]')",
		} {
			if _, err := conn.Exec(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		var nearest int
		if err := conn.QueryRow(ctx, "SELECT id FROM items ORDER BY embedding <-> '[4,5,5]' LIMIT 1").Scan(&nearest); err != nil || nearest != 2 {
			t.Errorf("vector query: id=%d err=%v", nearest, err)
		}
	})

	t.Run("postgres admin is not handed out", func(t *testing.T) {
		// The admin exists and works, but only sandboxer has it.
		if err := pgsvc.Ping(ctx, pg.Host, pg.Port, pg.AdminUser, pg.AdminPassword, "postgres", nil); err != nil {
			t.Errorf("admin login: %v", err)
		}
		if err := pgsvc.Ping(ctx, pg.Host, pg.Port, pg.AdminUser, pg.Password, "postgres", nil); err == nil {
			t.Error("admin accepts the app password")
		}
	})

	t.Run("postgres extensions", func(t *testing.T) {
		checkExtensionsCreatedByAdmin(t, pg, []string{"vector"})
	})

	t.Run("postgres init script", func(t *testing.T) {
		checkInitScriptFile(t, p, created.Resources.Containers["postgres"], created.Credentials)
	})

	t.Run("postgres extension guard", func(t *testing.T) {
		checkExtensionGuard(t, pg)
	})

	t.Run("redis app user", func(t *testing.T) {
		rdb := redissvc.Client(rd.Host, rd.Port, rd.User, rd.Password, nil)
		defer rdb.Close()
		if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatalf("SET: %v", err)
		}
		if v, err := rdb.Get(ctx, "k").Result(); err != nil || v != "v" {
			t.Fatalf("GET: %q %v", v, err)
		}
		// This form works on RediSearch 1.x and 2.x: 2.x indexes every
		// hash by default; 1.x needs FT.ADD (gone in later 2.x).
		if err := rdb.Do(ctx, "FT.CREATE", "idx", "SCHEMA", "title", "TEXT").Err(); err != nil {
			t.Fatalf("FT.CREATE as app: %v", err)
		}
		if err := rdb.HSet(ctx, "doc:1", "title", "hello sandbox").Err(); err != nil {
			t.Fatal(err)
		}
		res, err := rdb.Do(ctx, "FT.SEARCH", "idx", "sandbox").Slice()
		if err == nil && len(res) > 0 && res[0] == int64(0) {
			if err := rdb.Do(ctx, "FT.ADD", "idx", "doc:2", "1.0", "FIELDS", "title", "hello sandbox").Err(); err != nil {
				t.Fatalf("FT.ADD as app: %v", err)
			}
			res, err = rdb.Do(ctx, "FT.SEARCH", "idx", "sandbox").Slice()
		}
		if err != nil || len(res) == 0 || res[0] != int64(1) {
			t.Errorf("FT.SEARCH as app: %v %v", res, err)
		}
		for _, cmd := range [][]any{
			{"MODULE", "LOAD", "/usr/lib/redis/modules/redisearch.so"},
			{"MODULE", "LIST"},
			{"CONFIG", "SET", "maxmemory", "1"},
			{"CONFIG", "GET", "*"},
			{"DEBUG", "SLEEP", "0"},
			{"ACL", "SETUSER", "app", "+@all"},
			{"SHUTDOWN", "NOSAVE"},
		} {
			if err := rdb.Do(ctx, cmd...).Err(); err == nil {
				t.Errorf("%v as app succeeded", cmd)
			}
		}
		// The denial comes from the ACL, not only from the disabled commands.
		admin := redissvc.Client(rd.Host, rd.Port, rd.AdminUser, rd.AdminPassword, nil)
		defer admin.Close()
		for _, cmd := range [][]any{{"MODULE", "LOAD", "x"}, {"CONFIG", "SET", "maxmemory", "1"}, {"DEBUG", "SLEEP", "0"}} {
			reply, err := admin.Do(ctx, append([]any{"ACL", "DRYRUN", rd.User}, cmd...)...).Text()
			if err != nil || !strings.Contains(reply, "no permissions") {
				t.Errorf("ACL DRYRUN %v: %q %v, want a permission refusal", cmd, reply, err)
			}
		}
		// Module debug/config commands have no ACL category on Redis 7.0;
		// Create denies them by name.
		exists, err := redissvc.CommandFlags(ctx, admin, []string{"FT.DEBUG", "FT.CONFIG"})
		if err != nil {
			t.Fatal(err)
		}
		for _, cmd := range []string{"FT.DEBUG", "FT.CONFIG"} {
			if _, ok := exists[cmd]; !ok {
				continue
			}
			reply, err := admin.Do(ctx, "ACL", "DRYRUN", rd.User, cmd, "x").Text()
			if err != nil || !strings.Contains(reply, "no permissions") {
				t.Errorf("ACL DRYRUN %s: %q %v, want a permission refusal", cmd, reply, err)
			}
		}
		if len(exists) == 0 {
			t.Log("search module has neither FT.DEBUG nor FT.CONFIG")
		}
		// The default user is off: no unauthenticated access.
		anon := redissvc.Client(rd.Host, rd.Port, "", "", nil)
		defer anon.Close()
		if err := anon.Ping(ctx).Err(); err == nil {
			t.Error("PING without AUTH succeeded")
		}
	})

	t.Run("labels and engine settings", func(t *testing.T) {
		wantLabels := map[string]string{
			LabelManaged:    "true",
			LabelAddress:    req.Address,
			LabelLineage:    lineage,
			LabelGeneration: "1",
		}
		n, err := p.cli.NetworkInspect(ctx, created.Resources.Network, network.InspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for svc, id := range created.Resources.Containers {
			ci, err := p.cli.ContainerInspect(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			checkLabels(t, svc+" container", ci.Config.Labels, wantLabels)
			if ci.Config.Labels[LabelService] != svc {
				t.Errorf("%s container service label %q", svc, ci.Config.Labels[LabelService])
			}
			checkHostConfig(t, p, svc, ci)
			checkNoSecret(t, svc, ci, created.Credentials)
			// Only on the lineage network, never on the default bridge,
			// where other containers could reach it.
			var nets []string
			for name := range ci.NetworkSettings.Networks {
				nets = append(nets, name)
			}
			if len(nets) != 1 || nets[0] != n.Name {
				t.Errorf("%s container is on networks %v, want only %s", svc, nets, n.Name)
			}
		}
		// The network is the lineage's, shared by its sandboxes, with
		// inter-container traffic off (TestIsolation proves it holds).
		checkLabels(t, "network", n.Labels, map[string]string{
			LabelManaged: "true", LabelLineage: lineage, LabelNetwork: "lineage",
		})
		if n.Labels[LabelAddress] != "" || n.Labels[LabelGeneration] != "" {
			t.Errorf("lineage network carries instance labels: %v", n.Labels)
		}
		if n.Name != lineageNetworkName(lineage) {
			t.Errorf("network name %q, want %q", n.Name, lineageNetworkName(lineage))
		}
		if got := n.Options["com.docker.network.bridge.enable_icc"]; got != "false" {
			t.Errorf("network enable_icc = %q, want false", got)
		}
		if got := n.Options["com.docker.network.bridge.host_binding_ipv4"]; got != loopback {
			t.Errorf("network host_binding_ipv4 = %q, want %s", got, loopback)
		}
		if len(n.Containers) != 2 {
			t.Errorf("network has %d containers, want 2", len(n.Containers))
		}
		managed, err := p.ListManaged(ctx, lineage)
		if err != nil {
			t.Fatal(err)
		}
		kinds := map[string]int{}
		for _, m := range managed {
			kinds[m.Kind]++
			if m.Address != req.Address || m.Generation != 1 || m.Lineage != lineage {
				t.Errorf("ListManaged entry %+v", m)
			}
		}
		// The lineage network is in use, so it is no orphan and not listed;
		// the one volume is postgres's data directory.
		if kinds[KindContainer] != 2 || kinds[KindNetwork] != 0 || kinds[KindVolume] != 1 {
			t.Errorf("ListManaged kinds %v, want 2 containers, no network, 1 volume", kinds)
		}
	})

	// Destructive from here on.
	if err := p.removeContainer(ctx, created.Resources.Containers["redis"]); err != nil {
		t.Fatal(err)
	}
	err = p.Probe(ctx, rec)
	if !errors.Is(err, apply.ErrNotFound) {
		t.Errorf("Probe after removing redis by hand: %v, want ErrNotFound", err)
	}
	secrets.assertClean(t, err)

	if err := p.Delete(ctx, rec); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	assertNothingLabelled(t, p, lineage)
	if err := p.Delete(ctx, rec); err != nil {
		t.Errorf("second Delete: %v", err)
	}
	err = p.Probe(ctx, rec)
	if !errors.Is(err, apply.ErrNotFound) {
		t.Errorf("Probe after Delete: %v, want ErrNotFound", err)
	}
	secrets.assertClean(t, err)
}

func wantSQLState(t *testing.T, err error, code, what string) {
	t.Helper()
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != code {
		t.Errorf("%s as app: got %v, want SQLSTATE %s", what, err, code)
	}
}

func checkLabels(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s label %s = %q, want %q", what, k, got[k], v)
		}
	}
}

func checkHostConfig(t *testing.T, p *Provider, svc string, ci container.InspectResponse) {
	t.Helper()
	hc := ci.HostConfig
	if hc.Privileged {
		t.Errorf("%s: privileged", svc)
	}
	if !slices.Contains(hc.SecurityOpt, "no-new-privileges") {
		t.Errorf("%s: SecurityOpt %v lacks no-new-privileges", svc, hc.SecurityOpt)
	}
	if hc.Memory != 512<<20 || hc.PidsLimit == nil || *hc.PidsLimit != 512 {
		t.Errorf("%s: memory %d, pids %v", svc, hc.Memory, hc.PidsLimit)
	}
	if len(hc.PortBindings) == 0 {
		t.Errorf("%s: no port bindings", svc)
	}
	for port, bs := range hc.PortBindings {
		for _, b := range bs {
			if b.HostIP != "127.0.0.1" {
				t.Errorf("%s: %s requested on %q", svc, port, b.HostIP)
			}
		}
	}
	for port, bs := range ci.NetworkSettings.Ports {
		for _, b := range bs {
			if b.HostIP != "127.0.0.1" {
				t.Errorf("%s: %s published on %q", svc, port, b.HostIP)
			}
			if n, err := strconv.Atoi(b.HostPort); err != nil || n == 0 {
				t.Errorf("%s: %s host port %q", svc, port, b.HostPort)
			}
		}
	}
	// The only volume is postgres's data directory, labelled like its
	// container so that a sweep by label finds it.
	var pgdata bool
	for _, m := range ci.Mounts {
		if m.Type != "volume" {
			continue
		}
		if svc != "postgres" || m.Destination != defaultPGDATA {
			t.Errorf("%s: volume mounted at %s", svc, m.Destination)
			continue
		}
		pgdata = true
		v, err := p.cli.VolumeInspect(context.Background(), m.Name)
		if err != nil {
			t.Errorf("postgres: inspect data volume: %v", err)
		} else if v.Labels[LabelAddress] != ci.Config.Labels[LabelAddress] || v.Labels[LabelLineage] != ci.Config.Labels[LabelLineage] || v.Labels[LabelManaged] != "true" {
			t.Errorf("postgres: data volume labels %v, container labels %v", v.Labels, ci.Config.Labels)
		}
	}
	if svc == "postgres" && !pgdata {
		t.Errorf("postgres: no volume on %s: %v", defaultPGDATA, ci.Mounts)
	}
}

// checkNoSecret asserts the container's visible configuration (what
// `docker inspect` shows) holds no secret of the instance.
func checkNoSecret(t *testing.T, svc string, ci container.InspectResponse, creds map[string]state.Credentials) {
	t.Helper()
	visible := strings.Join(append(append(append([]string{ci.Name}, ci.Config.Cmd...), ci.Config.Env...), ci.Args...), " ")
	for k, v := range ci.Config.Labels {
		visible += " " + k + "=" + v
	}
	for csvc, c := range creds {
		if strings.Contains(visible, c.Password.Reveal()) {
			t.Errorf("%s container config shows the %s app password", svc, csvc)
		}
		if strings.Contains(visible, c.AdminPassword.Reveal()) {
			t.Errorf("%s container config shows the %s admin password", svc, csvc)
		}
	}
}
