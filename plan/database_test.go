package plan

import (
	"testing"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
)

// A cached sandbox whose role owns another database than the configuration
// names is replaced: its connection strings would be wrong either way.
func TestDatabaseNameChangeForcesReplace(t *testing.T) {
	fs := config.FeatureSet{"postgres": {}, "redis": {}}
	tests := []struct {
		name     string
		cached   string // database in the record ("" = provider did not say)
		want     string // Instance.Database
		action   Action
		reason   Reason
		prior    string
		database string
	}{
		{"default kept", "app", "", NoOp, ReasonCachedSuperset, "", ""},
		{"same name", "shop_test", "shop_test", NoOp, ReasonCachedSuperset, "", "shop_test"},
		{"renamed", "app", "shop_test", CreateThenDelete, ReasonDatabaseChanged, "app", "shop_test"},
		{"back to default", "shop_test", "", CreateThenDelete, ReasonDatabaseChanged, "shop_test", ""},
		{"unknown cached name", "", "shop_test", NoOp, ReasonCachedSuperset, "", "shop_test"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := inst("sandbox.ci", fs, nil)
			in.Database = tt.want
			r := rec("sandbox.ci", fs)
			r.Credentials = map[string]state.Credentials{"postgres": {Database: tt.cached}, "redis": {}}
			c := Decide(in, r, nil, Options{Now: now})
			if c.Action != tt.action || c.Reason != tt.reason || c.PriorDatabase != tt.prior || c.Database != tt.database {
				t.Errorf("got %s/%s prior %q database %q; want %s/%s prior %q database %q",
					c.Action, c.Reason, c.PriorDatabase, c.Database, tt.action, tt.reason, tt.prior, tt.database)
			}
		})
	}
	// A new instance carries its database to apply.
	in := inst("sandbox.ci", fs, nil)
	in.Database = "django"
	if c := Decide(in, nil, nil, Options{Now: now}); c.Action != Create || c.Database != "django" {
		t.Errorf("create: %s database %q", c.Action, c.Database)
	}
}
