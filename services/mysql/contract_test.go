package mysql

import (
	"slices"
	"strings"
	"testing"

	"github.com/sandboxer/sandboxer/services/contract"
	"github.com/sandboxer/sandboxer/state"
)

// Start as a runtime gets it: the password only in the file the
// entrypoint reads, the init script mounted among the image's, the data
// directory the runtime's, secure_file_priv's directory asked for, the
// runtime's admin made over TCP and root kept local.
func TestStart(t *testing.T) {
	c := state.Credentials{User: "app", Password: "app-pw", Database: "app", AdminUser: "sbx_admin", AdminPassword: "admin-pw"}
	at := contract.Placement{SecretDir: "/run/sbx", DataRoot: "/var/lib/sandboxer"}
	st, err := Service{}.Start(contract.StartInput{Creds: c, Features: []string{"archive", "federated"}, Allowed: Allowed()}, at)
	if err != nil {
		t.Fatal(err)
	}
	if string(st.Files[PasswordFile]) != "admin-pw" {
		t.Errorf("password file %q", st.Files[PasswordFile])
	}
	for _, s := range append(slices.Clone(st.Args), st.Env...) {
		if strings.Contains(s, "app-pw") || strings.Contains(s, "admin-pw") {
			t.Errorf("a password on the command line or in the environment: %s", s)
		}
	}
	init := string(st.Files[st.Mounts[InitDir+"/"+InitScriptName]])
	for _, want := range []string{
		"CREATE USER 'sbx_admin'@'%' IDENTIFIED VIA mysql_native_password USING '" + NativePasswordHash("admin-pw") + "';",
		"GRANT ALL PRIVILEGES ON *.* TO 'sbx_admin'@'%' WITH GRANT OPTION;",
		"CREATE USER 'app'@'%'",
		"INSTALL SONAME 'ha_archive'",
	} {
		if !strings.Contains(init, want) {
			t.Errorf("init script lacks %q:\n%s", want, init)
		}
	}
	if strings.Contains(init, "federated") || strings.Contains(init, "admin-pw") {
		t.Errorf("init script:\n%s", init)
	}
	for _, want := range []string{"MYSQL_ROOT_PASSWORD_FILE=/run/sbx/" + PasswordFile, "MARIADB_ROOT_HOST=localhost"} {
		if !slices.Contains(st.Env, want) {
			t.Errorf("env %v lacks %s", st.Env, want)
		}
	}
	if st.Args[0] != "--datadir=/var/lib/sandboxer" || !slices.Contains(st.Args, "--local-infile=0") || !st.NeedsData {
		t.Errorf("args %v, needs data %v", st.Args, st.NeedsData)
	}
	if !slices.Equal(st.EmptyDirs, []string{SecureFilePrivDir}) {
		t.Errorf("empty dirs %v", st.EmptyDirs)
	}
	if len(st.Derived) != 2 || st.Derived[0].Reveal() != NativePasswordHash("app-pw") {
		t.Errorf("derived %d", len(st.Derived))
	}
	at.TLSCert, at.TLSKey, at.TLSCA = "/t/c", "/t/k", "/t/ca"
	st, _ = Service{}.Start(contract.StartInput{Creds: c}, at)
	if !slices.Contains(st.Args, "--require-secure-transport=ON") || !slices.Contains(st.Args, "--ssl-ca=/t/ca") {
		t.Errorf("TLS args %v", st.Args)
	}
	if _, err := (Service{}).Start(contract.StartInput{Creds: c}, contract.Placement{SecretDir: "/s"}); err == nil {
		t.Error("a start without a data root")
	}
}
