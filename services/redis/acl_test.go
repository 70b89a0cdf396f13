package redis

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/sandboxer/sandboxer/state"
)

func TestACLFile(t *testing.T) {
	c := state.Credentials{User: "app", Password: "app-pw", AdminUser: "sbx_admin", AdminPassword: "admin-pw"}
	got := string(ACLFile(c))
	want := "user default off resetpass resetkeys resetchannels -@all\n" +
		"user sbx_admin on #" + sha256Hex("admin-pw") + " ~* &* +@all\n" +
		"user app on #" + sha256Hex("app-pw") + " " + AppACL + "\n"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ACL file (-want +got):\n%s", diff)
	}
	if strings.Contains(got, "app-pw") || strings.Contains(got, "admin-pw") {
		t.Error("ACL file holds a clear-text password")
	}
}

func TestParseInfoModules(t *testing.T) {
	info := "# Modules\r\nmodule:name=search,ver=20606,api=1,filters=0,usedby=[],using=[],options=[]\r\n" +
		"module:name=ReJSON,ver=20407,api=1,filters=0,usedby=[search],using=[],options=[handle-io-errors]\r\n"
	want := map[string]string{"search": "2.6.6", "ReJSON": "2.4.7"}
	if diff := cmp.Diff(want, parseInfoModuleVersions(info)); diff != "" {
		t.Errorf("modules (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]string{"ft": "1.2.0"}, parseInfoModuleVersions("module:name=ft,ver=10200,api=1")); diff != "" {
		t.Errorf("RediSearch 1.2 (-want +got):\n%s", diff)
	}
	if got := parseInfoModuleVersions("# Modules\r\n"); len(got) != 0 {
		t.Errorf("no modules: got %v", got)
	}
}
