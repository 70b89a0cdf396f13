package tenants

import (
	"crypto/sha256"
	"strings"
	"testing"
)

// service_accounts admit ServiceAccounts by "ns:name" or a namespace's
// default rule "ns:*"; the exact name wins over the namespace's rule.
func TestServiceAccounts(t *testing.T) {
	src := `
tenant "runner" {
  service_accounts = ["agents:runner", "ci:build.bot"]
}
tenant "agents" {
  tokens           = ["` + Hash("t1") + `"]
  service_accounts = ["agents:*", "team-b:*"]
  quota {
    instances = 3
  }
}
tenant "tokens-only" {
  tokens = ["` + Hash("t2") + `"]
}
`
	set, diags := Parse([]byte(src), "x.hcl", []string{"agent"})
	if diags.HasErrors() {
		t.Fatal(Error(diags))
	}
	for _, c := range []struct{ ns, name, want string }{
		{"agents", "runner", "runner"},
		{"agents", "other", "agents"},
		{"team-b", "anyone", "agents"},
		{"ci", "build.bot", "runner"},
		{"ci", "build", ""},
		{"default", "runner", ""},
		{"agent", "runner", ""}, // no prefix matching
	} {
		got := ""
		if tn := set.ServiceAccount(c.ns, c.name); tn != nil {
			got = tn.Name
		}
		if got != c.want {
			t.Errorf("%s:%s finds tenant %q, want %q", c.ns, c.name, got, c.want)
		}
	}
	if tn := set.ServiceAccount("team-b", "x"); tn.Quota.Instances != 3 {
		t.Errorf("the namespace rule's tenant has quota %+v", tn.Quota)
	}
	if tn := set.Lookup(sha256Sum("t1")); tn == nil || tn.Name != "agents" {
		t.Errorf("a tenant with tokens and service accounts: its token finds %v", tn)
	}
	if !set.HasServiceAccounts() {
		t.Error("HasServiceAccounts is false")
	}
	var none *Set
	if none.ServiceAccount("a", "b") != nil || none.HasServiceAccounts() {
		t.Error("a nil set admits a ServiceAccount")
	}
}

func TestBadServiceAccounts(t *testing.T) {
	for name, c := range map[string]struct{ src, want string }{
		"no namespace": {"tenant \"a\" {\n  service_accounts = [\"runner\"]\n}\n",
			"x.hcl:2:23: Invalid service account"},
		"empty name": {"tenant \"a\" {\n  service_accounts = [\"agents:\"]\n}\n",
			"x.hcl:2:23: Invalid service account"},
		"namespace wildcard": {"tenant \"a\" {\n  service_accounts = [\"*:runner\"]\n}\n",
			"x.hcl:2:23: Invalid service account"},
		"partial wildcard": {"tenant \"a\" {\n  service_accounts = [\"agents:run*\"]\n}\n",
			"x.hcl:2:23: Invalid service account"},
		"upper case": {"tenant \"a\" {\n  service_accounts = [\"Agents:runner\"]\n}\n",
			"x.hcl:2:23: Invalid service account"},
		"username form": {"tenant \"a\" {\n  service_accounts = [\"system:serviceaccount:agents:runner\"]\n}\n",
			"x.hcl:2:23: Invalid service account"},
		"not a list": {"tenant \"a\" {\n  service_accounts = \"agents:runner\"\n}\n",
			"x.hcl:2:22: Invalid list"},
		"in two tenants": {"tenant \"a\" {\n  service_accounts = [\"agents:*\"]\n}\ntenant \"b\" {\n  service_accounts = [\"agents:*\"]\n}\n",
			"x.hcl:5:23: Duplicate service account: \"agents:*\" is already given at x.hcl:2,23-33"},
		"twice in one": {"tenant \"a\" {\n  service_accounts = [\"agents:r\", \"agents:r\"]\n}\n",
			"x.hcl:2:35: Duplicate service account"},
		"neither": {"tenant \"a\" {\n  blocks = [\"agent\"]\n}\n",
			"x.hcl:1:1: No tokens: tenant \"a\" needs at least one token hash (tokens) or ServiceAccount (service_accounts)"},
		"both empty": {"tenant \"a\" {\n  tokens = []\n  service_accounts = []\n}\n",
			"x.hcl:2:3: No tokens"},
	} {
		t.Run(name, func(t *testing.T) {
			set, diags := Parse([]byte(c.src), "x.hcl", []string{"agent"})
			if !diags.HasErrors() || set != nil {
				t.Fatalf("accepted:\n%s", c.src)
			}
			if msg := Error(diags).Error(); !strings.Contains(msg, c.want) {
				t.Errorf("error %q, want it to hold %q", msg, c.want)
			}
		})
	}
}

func sha256Sum(tok string) [32]byte { return sha256.Sum256([]byte(tok)) }
