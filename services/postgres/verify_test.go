package postgres

import "testing"

func TestDisallowedDependency(t *testing.T) {
	requires := map[string][]string{
		"earthdistance":  {"cube"},
		"cube":           {},
		"postgis_raster": {"postgis"},
		"evil":           {"cube", "plpython3u"},
		"uses_plpgsql":   {"plpgsql"},
	}
	allowed := []string{"cube", "earthdistance", "postgis", "uses_plpgsql"}
	installed := []string{"plpgsql"}
	tests := []struct {
		ext     string
		wantDep string
	}{
		{"earthdistance", ""},
		{"postgis_raster", ""},
		{"evil", "plpython3u"},
		{"uses_plpgsql", ""},
		{"vector", ""},
	}
	for _, tt := range tests {
		dep, bad := disallowedDependency(tt.ext, requires, allowed, installed)
		if dep != tt.wantDep || bad != (tt.wantDep != "") {
			t.Errorf("disallowedDependency(%q) = %q, %v; want %q", tt.ext, dep, bad, tt.wantDep)
		}
	}
}
