package config

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFrameworkSettingsPerInstance(t *testing.T) {
	cfg, diags := Load("testdata/valid/framework", Input{}, DefaultCatalog())
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	type got struct{ Database, DatabaseName, EnvPrefix string }
	want := map[string]got{
		`sandbox.agent`:       {"shop_test", "shop_test", "ROBOCO_TEST_"}, // the project's
		`sandbox.django`:      {"django_app", "django_app", "ROBOCO_TEST_"},
		`sandbox.matrix["a"]`: {"test_a", "test_a", "M_A_"},
		`sandbox.matrix["b"]`: {"test_b", "test_b", "M_B_"},
	}
	have := map[string]got{}
	for _, in := range cfg.Instances {
		have[in.Addr.String()] = got{in.Database, in.DatabaseName(), in.EnvPrefix}
	}
	if d := cmp.Diff(want, have); d != "" {
		t.Errorf("instances (-want +got):\n%s", d)
	}
}

func TestDatabaseDefaultsToApp(t *testing.T) {
	cfg, diags := Load("testdata/valid/bare_project", Input{}, DefaultCatalog())
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	for _, in := range cfg.Instances {
		if in.DatabaseName() != "app" || in.EnvPrefix != "" {
			t.Errorf("%s: database %q, prefix %q; want app and the default prefix", in.Addr, in.DatabaseName(), in.EnvPrefix)
		}
	}
}

func TestProfiles(t *testing.T) {
	cfg, diags := Load("testdata/valid/framework", Input{}, DefaultCatalog())
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	p := cfg.Projects["shop"]
	rag, err := p.Profile("rag")
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]string{"postgres", "redis"}, rag.Services); d != "" {
		t.Errorf("rag services (-want +got):\n%s", d)
	}
	if d := cmp.Diff(FeatureSet{"postgres": {"pg_trgm", "vector"}, "redis": {"search"}}, rag.Extensions); d != "" {
		t.Errorf("rag extensions (-want +got):\n%s", d)
	}
	sql, _ := p.Profile("sql")
	if sql.Services != nil {
		t.Errorf("sql profile services = %v, want nil (keeps the sandbox's)", sql.Services)
	}
	_, err = p.Profile("nope")
	var unknown *UnknownProfileError
	if !errors.As(err, &unknown) || err.Error() != `project "shop" declares no profile "nope" (declared: rag, sql)` {
		t.Errorf("unknown profile error = %v", err)
	}
}

func TestCheckDatabaseAndPrefix(t *testing.T) {
	for _, ok := range []string{"app", "shop_test", "_x", "a1"} {
		if err := CheckDatabase(ok); err != nil {
			t.Errorf("CheckDatabase(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "App", "1x", "a-b", "a b", "template1", "postgres", "x'; DROP", string(make([]byte, 64))} {
		if CheckDatabase(bad) == nil {
			t.Errorf("CheckDatabase(%q) accepted it", bad)
		}
	}
	for _, ok := range []string{"SANDBOXER_", "ROBOCO_TEST_", "x", "_"} {
		if err := CheckEnvPrefix(ok); err != nil {
			t.Errorf("CheckEnvPrefix(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "1A", "A-B_", "A B", "$(rm)", "A=B"} {
		if CheckEnvPrefix(bad) == nil {
			t.Errorf("CheckEnvPrefix(%q) accepted it", bad)
		}
	}
}
