package tenants

import (
	"crypto/sha256"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/config"
)

// The example a reader copies loads against its own configuration, and
// its tokens find their tenants.
func TestExampleLoads(t *testing.T) {
	dir := filepath.Join("..", "..", "examples", "tenants")
	cfg, diags := config.Load(dir, config.Input{}, config.DefaultCatalog())
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	var blocks []string
	for name, sb := range cfg.Sandboxes {
		if sb.OnDemand {
			blocks = append(blocks, name)
		}
	}
	set, err := Load(filepath.Join(dir, "tenants.hcl"), blocks)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(set.Names(), ","); got != "acme,beta,runner,team-b" {
		t.Errorf("tenants %s, want acme,beta,runner,team-b", got)
	}
	for sa, want := range map[string]string{"agents:runner": "runner", "team-b:ci": "team-b", "agents:other": ""} {
		ns, name, _ := strings.Cut(sa, ":")
		got := ""
		if tn := set.ServiceAccount(ns, name); tn != nil {
			got = tn.Name
		}
		if got != want {
			t.Errorf("ServiceAccount %s finds %q, want %q", sa, got, want)
		}
	}
	for tok, want := range map[string]string{"acme-example-token-1": "acme", "acme-example-token-2": "acme", "beta-example-token": "beta"} {
		tn := set.Lookup(sha256.Sum256([]byte(tok)))
		if tn == nil || tn.Name != want {
			t.Errorf("token of %s finds %v", want, tn)
		}
	}
	if set.Lookup(sha256.Sum256([]byte("not-a-token"))) != nil {
		t.Error("an unknown token finds a tenant")
	}
	acme := set.Lookup(sha256.Sum256([]byte("acme-example-token-1")))
	if acme.Quota.Instances != 5 || acme.Quota.MaxTTL != 4*time.Hour || acme.Quota.RequestsPerMinute != 600 ||
		acme.Quota.Databases != 20 || acme.Quota.Snapshots != 10 || len(acme.Blocks) != 2 {
		t.Errorf("acme: %+v", acme)
	}
}

func TestBadFiles(t *testing.T) {
	h := Hash("t1")
	const plain = "my-secret-plain-token"
	for name, c := range map[string]struct{ src, want string }{
		"unknown field": {"tenant \"a\" {\n  tokens = [\"" + h + "\"]\n  colour = 1\n}\n",
			"x.hcl:3:3: Unsupported argument"},
		"duplicate tenant": {"tenant \"a\" {\n  tokens = [\"" + h + "\"]\n}\ntenant \"a\" {\n  tokens = [\"" + Hash("t2") + "\"]\n}\n",
			"x.hcl:4:8: Duplicate tenant"},
		"duplicate token": {"tenant \"a\" {\n  tokens = [\"" + h + "\"]\n}\ntenant \"b\" {\n  tokens = [\"" + h + "\"]\n}\n",
			"x.hcl:5:13: Duplicate token"},
		"plain token": {"tenant \"a\" {\n  tokens = [\"" + plain + "\"]\n}\n",
			"x.hcl:2:13: Not a token hash"},
		"unknown block": {"tenant \"a\" {\n  tokens = [\"" + h + "\"]\n  blocks = [\"nope\"]\n}\n",
			`x.hcl:3:13: Unknown block: no on-demand sandbox block "nope"`},
		"bad quota": {"tenant \"a\" {\n  tokens = [\"" + h + "\"]\n  quota {\n    instances = -1\n  }\n}\n",
			"x.hcl:4:17: Invalid quota"},
		"bad ttl": {"tenant \"a\" {\n  tokens = [\"" + h + "\"]\n  quota {\n    max_ttl = \"forever\"\n  }\n}\n",
			"x.hcl:4:15: Invalid quota"},
		"bad name": {"tenant \"A.b\" {\n  tokens = [\"" + h + "\"]\n}\n",
			"x.hcl:1:8: Invalid tenant name"},
		"bad snapshots quota": {"tenant \"a\" {\n  tokens = [\"" + h + "\"]\n  quota {\n    snapshots = 1.5\n  }\n}\n",
			"x.hcl:4:17: Invalid quota"},
		"no tokens": {"tenant \"a\" {\n  tokens = []\n}\n",
			"x.hcl:2:3: No tokens"},
	} {
		t.Run(name, func(t *testing.T) {
			set, diags := Parse([]byte(c.src), "x.hcl", []string{"agent"})
			if !diags.HasErrors() || set != nil {
				t.Fatalf("accepted:\n%s", c.src)
			}
			msg := Error(diags).Error()
			if !strings.Contains(msg, c.want) {
				t.Errorf("error %q, want it to hold %q", msg, c.want)
			}
			for _, secret := range []string{plain, strings.TrimPrefix(h, "sha256:")} {
				if strings.Contains(msg, secret) {
					t.Errorf("the error quotes a token or hash: %q", msg)
				}
			}
		})
	}
}
