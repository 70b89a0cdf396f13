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
	// Every optional attribute set: on a user network, with TLS.
	c := Credentials{Host: "h", Port: 1, User: "u", Password: "p", Database: "d",
		NetworkHost: "n", NetworkPort: 5432, CA: "pem", CAFile: "/ca.pem"}
	for name := range c.Attributes("postgres") {
		if !known[name] {
			t.Errorf("attribute %q is not in CredentialAttributes", name)
		}
	}
	if len(c.Attributes("postgres")) != len(known) {
		t.Errorf("postgres reports %d attributes, the table has %d", len(c.Attributes("postgres")), len(known))
	}
}

// The in-network endpoint and the CA file are handed out only when the
// instance has them, and URLs follow TLS.
func TestReachAttributes(t *testing.T) {
	plain := Credentials{Host: "127.0.0.1", Port: 40000, User: "app", Password: "pw", Database: "app"}
	if a := plain.Attributes("postgres"); a[AttrNetworkURL] != "" || a[AttrCA] != "" || a[AttrURL] != "postgres://app:pw@127.0.0.1:40000/app?sslmode=disable" {
		t.Errorf("plain: %v", a)
	}
	reach := plain
	reach.NetworkHost, reach.NetworkPort = "sbx-x-g1-postgres", 5432
	reach.CA, reach.CAFile = "pem", "/w/.sandboxer/ca/a&b.ca.pem"
	want := map[string]string{
		AttrURL:         "postgres://app:pw@127.0.0.1:40000/app?sslmode=verify-full&sslrootcert=/w/.sandboxer/ca/a%26b.ca.pem",
		AttrNetworkURL:  "postgres://app:pw@sbx-x-g1-postgres:5432/app?sslmode=verify-full&sslrootcert=/w/.sandboxer/ca/a%26b.ca.pem",
		AttrNetworkHost: "sbx-x-g1-postgres",
		AttrNetworkPort: "5432",
		AttrCA:          "/w/.sandboxer/ca/a&b.ca.pem",
	}
	got := reach.Attributes("postgres")
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	r := reach
	r.NetworkPort = 6379
	if u := r.Attributes("redis")[AttrNetworkURL]; u != "rediss://app:pw@sbx-x-g1-postgres:6379/0" {
		t.Errorf("redis network URL = %q", u)
	}
	rec := &Record{Credentials: map[string]Credentials{"redis": r}}
	m := rec.EnvMap("")
	if m["SANDBOXER_REDIS_NETWORK_PORT"] != "6379" || m["SANDBOXER_REDIS_CA"] != r.CAFile || m["SANDBOXER_REDIS_URL"] == "" {
		t.Errorf("env: %v", m)
	}
	for _, v := range rec.Env("") {
		if v.Name == "SANDBOXER_REDIS_NETWORK_URL" && !v.Secret {
			t.Error("the network URL is not marked secret")
		}
	}
}
