package state

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRecordEnvNamesAndPrefix(t *testing.T) {
	rec := &Record{Credentials: map[string]Credentials{
		"postgres": {Host: "127.0.0.1", Port: 5432, User: "u", Password: "p'w", Database: "shop_test"},
		"redis":    {Host: "127.0.0.1", Port: 6379, User: "r", Password: "rp"},
	}}
	tests := []struct {
		prefix string
		want   []EnvVar
	}{
		{"", []EnvVar{
			{"SANDBOXER_POSTGRES_DB", "shop_test", false},
			{"SANDBOXER_POSTGRES_HOST", "127.0.0.1", false},
			{"SANDBOXER_POSTGRES_PASSWORD", "p'w", true},
			{"SANDBOXER_POSTGRES_PORT", "5432", false},
			{"SANDBOXER_POSTGRES_URL", "postgres://u:p%27w@127.0.0.1:5432/shop_test?sslmode=disable", true},
			{"SANDBOXER_POSTGRES_USER", "u", false},
			{"SANDBOXER_REDIS_HOST", "127.0.0.1", false},
			{"SANDBOXER_REDIS_PASSWORD", "rp", true},
			{"SANDBOXER_REDIS_PORT", "6379", false},
			{"SANDBOXER_REDIS_URL", "redis://r:rp@127.0.0.1:6379/0", true},
			{"SANDBOXER_REDIS_USER", "r", false},
		}},
		{"ROBOCO_TEST_", nil},
	}
	for _, tt := range tests {
		got := rec.Env(tt.prefix)
		if tt.prefix == "ROBOCO_TEST_" {
			for _, v := range got {
				if v.Name[:len("ROBOCO_TEST_")] != "ROBOCO_TEST_" {
					t.Errorf("prefix %q: variable %s", tt.prefix, v.Name)
				}
			}
			if m := rec.EnvMap(tt.prefix); m["ROBOCO_TEST_POSTGRES_URL"] == "" || len(m) != 11 {
				t.Errorf("EnvMap(%q) = %d names, ROBOCO_TEST_POSTGRES_URL %q", tt.prefix, len(m), m["ROBOCO_TEST_POSTGRES_URL"])
			}
			continue
		}
		if d := cmp.Diff(tt.want, got); d != "" {
			t.Errorf("Env(%q) (-want +got):\n%s", tt.prefix, d)
		}
	}
}

// Every attribute a service's credentials report is in the table, so env
// and outputs cannot drift apart.
func TestAttributesAreInTheTable(t *testing.T) {
	known := map[string]bool{}
	for _, a := range CredentialAttributes() {
		known[a.Name] = true
	}
	c := Credentials{Host: "h", Port: 1, User: "u", Password: "p", Database: "d"}
	for name := range c.Attributes("postgres") {
		if !known[name] {
			t.Errorf("attribute %q is not in CredentialAttributes", name)
		}
	}
	if len(c.Attributes("postgres")) != len(known) {
		t.Errorf("postgres reports %d attributes, the table has %d", len(c.Attributes("postgres")), len(known))
	}
}
