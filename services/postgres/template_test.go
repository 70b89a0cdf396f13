package postgres

import (
	"strings"
	"testing"

	"github.com/sandboxer/sandboxer/state"
)

func TestTemplateSessions(t *testing.T) {
	c := state.Credentials{User: "app", Password: "app-pw", AdminUser: "sbx_admin", AdminPassword: "admin-pw", Database: "app"}
	const av, pv = "SCRAM-SHA-256$4096:YQ==$YQ==:YQ==", "SCRAM-SHA-256$4096:Yg==$Yg==:Yg=="
	got := TemplateSessions(c, av, pv, []string{"vector"}, []string{"vector"})
	if len(got) != 1 || got[0].Database != "template1" {
		t.Fatalf("sessions: %+v", got)
	}
	sql := string(got[0].SQL)
	order := []string{
		`ALTER ROLE "sbx_admin" PASSWORD '` + av + `';`,
		`CREATE ROLE "app" LOGIN PASSWORD '` + pv + `' NOSUPERUSER NOCREATEROLE CREATEDB NOREPLICATION NOBYPASSRLS;`,
		"DO $sandboxer$",
		`CREATE DATABASE "app" OWNER "app" TEMPLATE template1 STRATEGY = FILE_COPY;`,
	}
	last := -1
	for _, want := range order {
		i := strings.Index(sql, want)
		if i <= last {
			t.Fatalf("%q missing or out of order in:\n%s", want, sql)
		}
		last = i
	}
	// Single-user mode ends a statement at ";" and an empty line only.
	if n := strings.Count(sql, ";\n\n"); n != 4 {
		t.Errorf("%d statement ends, want 4:\n%s", n, sql)
	}
	if strings.Contains(sql, "app-pw") || strings.Contains(sql, "admin-pw") {
		t.Error("a clear-text password in the session SQL")
	}

	ts := TemplateSessions(c, av, pv, []string{"timescaledb", "vector"}, []string{"timescaledb", "vector"})
	if len(ts) != 2 || ts[1].Database != "app" || !strings.Contains(string(ts[0].SQL), "TEMPLATE template0") ||
		strings.Contains(string(ts[0].SQL), "DO $sandboxer$") || !strings.Contains(string(ts[1].SQL), "'timescaledb'") {
		t.Errorf("timescaledb sessions: %+v", ts)
	}
}

func TestTemplateStartScript(t *testing.T) {
	s := string(TemplateStartScript("k3y", []Session{{Database: "template1"}}, []string{"/etc/sandboxer/pg-session-1.sql"},
		[]string{"-c", "fsync=off", "-c", "x='y'"}))
	for _, want := range []string{
		`!= 'k3y' ]`, // the marker is checked before anything else
		"exit 75",
		`cp -a "$tpl/." "$PGDATA/"`,
		`rm -f "$PGDATA/` + TemplateMarker + `"`,
		`postgres --single -j -D "$PGDATA" '-c' 'fsync=off' '-c' 'x='\''y'\'''`,
		`single 'template1' '/etc/sandboxer/pg-session-1.sql'`,
		`exec "$@"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("start script lacks %q:\n%s", want, s)
		}
	}
	if strings.Index(s, "exit 75") > strings.Index(s, "cp -a") {
		t.Error("the template is copied before it is checked")
	}
	if strings.Index(s, "single 'template1'") > strings.Index(s, `exec "$@"`) {
		t.Error("the server starts before the credentials are set")
	}
	if f := string(TemplateFinishScript("k3y")); !strings.Contains(f, "pg_ctl -D \"$PGDATA\" -m fast -w stop\nprintf") {
		t.Errorf("finish script does not stop the server before the marker:\n%s", f)
	}
	if r := string(TemplateRevokeSQL("sbx_admin")); !strings.Contains(r, `ALTER ROLE "sbx_admin" PASSWORD NULL;`) {
		t.Errorf("revoke: %s", r)
	}
}
