package kit

import (
	"errors"
	"strings"
	"testing"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
)

func TestValidateRequest(t *testing.T) {
	cat := config.DefaultCatalog()
	cfg := &config.Provider{Images: map[string]config.Image{"postgres": {Ref: "example/pg:1"}}}
	ok := apply.CreateRequest{Address: "sandbox.x", Lineage: "lin", Generation: 1,
		Features: config.FeatureSet{"postgres": {"pg_trgm"}}}
	images, err := ValidateRequest(ok, cat, cfg, "")
	if err != nil || images["postgres"].Ref != "example/pg:1" {
		t.Fatalf("a valid request: %v, %v", images, err)
	}
	var notAllowed *config.FeatureNotAllowedError
	bad := ok
	bad.Features = config.FeatureSet{"postgres": {"plpython3u"}}
	if _, err := ValidateRequest(bad, cat, cfg, ""); !errors.As(err, &notAllowed) {
		t.Errorf("a feature outside the allowlist: %v", err)
	}
	for name, mutate := range map[string]func(*apply.CreateRequest){
		"no address":    func(r *apply.CreateRequest) { r.Address = "" },
		"generation 0":  func(r *apply.CreateRequest) { r.Generation = 0 },
		"no services":   func(r *apply.CreateRequest) { r.Features = nil },
		"unknown":       func(r *apply.CreateRequest) { r.Features = config.FeatureSet{"nosuch": {}} },
		"bad database":  func(r *apply.CreateRequest) { r.Database = "template1" },
		"TLS, no CADir": func(r *apply.CreateRequest) { r.Publish.TLS = true },
	} {
		r := ok
		mutate(&r)
		if _, err := ValidateRequest(r, cat, cfg, ""); err == nil || strings.Contains(err.Error(), "%!") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
