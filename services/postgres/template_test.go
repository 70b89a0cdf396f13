package postgres

import (
	"strings"
	"testing"

	"github.com/sandboxer/sandboxer/state"
)

func TestTemplateSessions(t *testing.T) {
	c := state.Credentials{User: "app", Password: "app-pw", AdminUser: "sbx_admin", AdminPassword: "admin-pw", Database: "app"}
	const av, pv = "SCRAM-SHA-256$4096:YQ==$YQ==:YQ==", "SCRAM-SHA-256$4096:Yg==$Yg==:Yg=="
	got := TemplateSessions(c, av, pv)
	want := "ALTER ROLE \"sbx_admin\" PASSWORD '" + av + "';\n\nALTER ROLE \"app\" PASSWORD '" + pv + "';\n\n"
	if len(got) != 1 || got[0].Database != "postgres" || string(got[0].SQL) != want {
		t.Fatalf("sessions: %+v", got)
	}
	// The template makes what InitScript makes, the role without a password.
	tpl := string(TemplateInitScript(c, []string{"vector"}, []string{"vector"}))
	scratch := string(InitScript(c, pv, []string{"vector"}, []string{"vector"}))
	if strings.Replace(scratch, "'"+pv+"'", "NULL", 1) != tpl {
		t.Errorf("template init script is not InitScript without the password:\n%s\n---\n%s", tpl, scratch)
	}
	for _, s := range []string{tpl, string(got[0].SQL)} {
		if strings.Contains(s, "app-pw") || strings.Contains(s, "admin-pw") {
			t.Error("a clear-text password in template SQL")
		}
	}
	if !(TemplateInitName < TemplateRevokeName && TemplateRevokeName < TemplateFinishName) {
		t.Error("the builder's init files run out of order")
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
	if !strings.Contains(s, "if [ -s \"$PGDATA/PG_VERSION\" ]; then") || strings.Index(s, "PG_VERSION\" ]; then") > strings.Index(s, "cp -a") {
		t.Error("a restart would copy the template over the sandbox's data")
	}
	if strings.Index(s, "exit 75") > strings.Index(s, "cp -a") {
		t.Error("the template is copied before it is checked")
	}
	if strings.Index(s, "single 'template1'") > strings.LastIndex(s, `exec "$@"`) {
		t.Error("the server starts before the credentials are set")
	}
	if f := string(TemplateFinishScript("k3y")); !strings.Contains(f, "pg_ctl -D \"$PGDATA\" -m fast -w stop\nprintf") {
		t.Errorf("finish script does not stop the server before the marker:\n%s", f)
	}
	if r := string(TemplateRevokeSQL("sbx_admin")); !strings.Contains(r, `ALTER ROLE "sbx_admin" PASSWORD NULL;`) {
		t.Errorf("revoke: %s", r)
	}
}
