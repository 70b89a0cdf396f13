package sandboxer_test

import (
	"context"
	"errors"
	"testing"

	"github.com/sandboxer/sandboxer"
)

// Through the library: a profile picks services and features, a prefix
// names the variables, and the project's database name is the one handed
// out.
func TestRequestProfilePrefixDatabase(t *testing.T) {
	ctx := context.Background()
	sb, _, _ := open(t, `
project "shop" {
  services = ["postgres", "redis"]
  database = "shop_test"

  profile "rag" {
    extensions = { postgres = ["vector"], redis = ["search"] }
  }
}

sandbox "agent" {
  project   = project.shop
  services  = ["postgres"]
  on_demand = true
}
`)
	s, err := sb.Request(ctx, "sandbox.agent", sandboxer.RequestOptions{Key: "k", Profile: "rag", Prefix: "ROBOCO_TEST_"})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Features["redis"]; len(got) != 1 || got[0] != "search" {
		t.Errorf("redis features = %v, want [search] from the profile", got)
	}
	if s.Env["ROBOCO_TEST_POSTGRES_DB"] != "shop_test" || s.Env["ROBOCO_TEST_REDIS_URL"] == "" {
		t.Errorf("env names/values: %v", keysOf(s.Env))
	}
	_, err = sb.Request(ctx, "sandbox.agent", sandboxer.RequestOptions{Key: "k", Profile: "nope"})
	if !errors.Is(err, sandboxer.ErrNotFound) {
		t.Errorf("unknown profile: %v, want ErrNotFound", err)
	}
}

func keysOf(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}
