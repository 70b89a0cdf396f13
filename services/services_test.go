package services_test

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/services"
	"github.com/sandboxer/sandboxer/services/mysql"
	"github.com/sandboxer/sandboxer/services/valkey"
	"github.com/sandboxer/sandboxer/state"
)

// The catalogue: every service is found by its name, and what the
// runtimes and the snapshot store ask of it is there and tells services
// apart.
func TestCatalogue(t *testing.T) {
	names := map[string]bool{}
	exts := map[string]string{}
	for _, s := range services.All() {
		n := s.Name()
		if n == "" || names[n] {
			t.Errorf("service name %q empty or twice", n)
		}
		names[n] = true
		if got, ok := services.Lookup(n); !ok || got.Name() != n {
			t.Errorf("Lookup(%q) = %v, %v", n, got, ok)
		}
		if s.Port() <= 0 || s.Account() == "" {
			t.Errorf("%s: port %d, account %q", n, s.Port(), s.Account())
		}
		f, ok := services.SnapshotFormats(n)
		if !ok || f.Name == "" || f.Ext == "" || f != s.SnapshotFormat() {
			t.Errorf("%s: snapshot format %+v, %v", n, f, ok)
		}
		// A snapshot file is named service+Ext: services may share a
		// format (Valkey reads Redis's key dump), but one extension
		// never means two formats.
		if other, dup := exts[f.Ext]; dup && other != f.Name {
			t.Errorf("%s's extension %s is format %s's too", n, f.Ext, other)
		}
		exts[f.Ext] = f.Name
		if _, ok := s.(services.ModuleLoader); ok != (n == "redis" || n == "valkey") {
			t.Errorf("%s: a module loader is %v", n, ok)
		}
		if p := s.Prober(); p == nil {
			t.Errorf("%s has no prober", n)
		} else {
			p.Close()
		}
	}
	if len(names) < 2 {
		t.Fatalf("the catalogue has %d services", len(names))
	}
	if _, ok := services.Lookup("nosuch"); ok {
		t.Error("Lookup found a service that is not in the catalogue")
	}
	if _, ok := services.SnapshotFormats("nosuch"); ok {
		t.Error("a snapshot format for a service that is not in the catalogue")
	}
}

// config holds the catalogue's data half (allowlist, URL shape, default
// images) because it sits below services: every service here is there,
// with the feature list its package allows.
func TestCatalogueData(t *testing.T) {
	cat := config.DefaultCatalog()
	for _, s := range services.All() {
		n := s.Name()
		if cat.CheckService(n) != nil {
			t.Errorf("%s is not in config's catalogue", n)
		}
		if _, ok := config.ServiceURLShape(n); !ok {
			t.Errorf("%s has no URL shape in config", n)
		}
		if len(config.DefaultImagesOf(n)) == 0 {
			t.Errorf("%s has no default image in config", n)
		}
	}
	if got := cat.Allowed("valkey"); !slices.Equal(got, valkey.Allowed()) {
		t.Errorf("config allows valkey %v, services/valkey %v", got, valkey.Allowed())
	}
	if shape, _ := config.ServiceURLShape("valkey"); shape.Scheme != "redis" || shape.TLSScheme != "rediss" {
		t.Errorf("valkey URL shape %+v, want the Redis scheme", shape)
	}
	c := state.Credentials{Host: "127.0.0.1", Port: 6379, User: "app", Password: "p@ss"}
	if got, want := c.URL("valkey"), valkey.URL(c, c.Host, c.Port); got != want {
		t.Errorf("state's valkey URL %s, services/valkey's %s", got, want)
	}
	if got := cat.Allowed("mysql"); !slices.Equal(got, mysql.Allowed()) {
		t.Errorf("config allows mysql %v, services/mysql %v", got, mysql.Allowed())
	}
	m := state.Credentials{Host: "127.0.0.1", Port: 3306, User: "app", Password: "p@ss/:?", Database: "app"}
	if got, want := m.URL("mysql"), mysql.URL(m, m.Host, m.Port); got != want || !strings.HasPrefix(got, "mysql://app:") {
		t.Errorf("state's mysql URL %s, services/mysql's %s", got, want)
	}
	m.CA, m.CAFile = "pem", "/tmp/a b/ca&.crt"
	if got, want := m.URL("mysql"), mysql.URL(m, m.Host, m.Port); got != want || !strings.Contains(got, "ssl-mode=VERIFY_IDENTITY") {
		t.Errorf("with TLS: state's mysql URL %s, services/mysql's %s", got, want)
	}
	if d := config.DefaultImagesOf("mysql"); len(d) != 1 || d[0].Ref != "mariadb:11.8" {
		t.Errorf("mysql's default images %v, want the official mariadb:11.8", d)
	}
}

// PostgreSQL and MySQL find an image's features in its files, without a
// start: a runtime asks for FileInspector, never for their names.
func TestFileInspectors(t *testing.T) {
	for _, s := range services.All() {
		_, files := s.(services.FileInspector)
		_, modules := s.(services.ModuleLoader)
		if files == modules {
			t.Errorf("%s: FileInspector %v, ModuleLoader %v: a runtime could not tell how to inspect its images", s.Name(), files, modules)
		}
		if fi, ok := s.(services.FileInspector); ok && !strings.Contains(fi.FeaturesHint("docker"), `image "`+s.Name()+`"`) {
			t.Errorf("%s: hint %q", s.Name(), fi.FeaturesHint("docker"))
		}
	}
}

// Every service in the catalogue can be forked (sandboxer fork), but
// those listed here: a fork of a sandbox with one is refused before
// anything starts (apply.ErrNotForkable). The list only shrinks.
func TestEveryServiceForks(t *testing.T) {
	notYet := map[string]string{
		// MariaDB's files are consistent at one instant only under a
		// backup lock (BACKUP STAGE), not written yet.
		"mysql": "BACKUP STAGE capture not written",
	}
	for _, s := range services.All() {
		_, ok := s.(services.Forker)
		if _, listed := notYet[s.Name()]; ok == listed {
			t.Errorf("service %s: Forker %v, listed as not forkable %v", s.Name(), ok, listed)
		}
	}
}

// A feature the allowlist gives API generations (config.Feature) belongs
// to a service that detects them (GenerationDetector), and what the
// service detects is one of the allowlist's generations: a request for
// "search@2" can then be met by an image, and refused by one that has
// another.
func TestGenerations(t *testing.T) {
	cat := config.DefaultCatalog()
	for _, s := range services.All() {
		gd, detects := s.(services.GenerationDetector)
		for _, f := range cat.Allowed(s.Name()) {
			gens := cat.Generations(s.Name(), f)
			if len(gens) > 0 && !detects {
				t.Errorf("%s %s has generations %v but the service detects none", s.Name(), f, gens)
			}
			if !detects {
				continue
			}
			for _, v := range []string{"1.0.0", "1.2.0", "2.0.0", "2.8.4", "8.0.2", "99.0.0"} {
				if g := gd.FeatureGeneration(f, v); g != "" && !slices.Contains(gens, g) {
					t.Errorf("%s %s %s is generation %q, which the allowlist does not have (%v)", s.Name(), f, v, g, gens)
				}
			}
		}
	}
	got := services.Generations("redis", map[string]string{"search": "1.2.0", "json": "2.4.0"})
	if want := map[string]string{"search": "1"}; !maps.Equal(got, want) {
		t.Errorf("redis generations %v, want %v", got, want)
	}
	if got := services.Generations("valkey", map[string]string{"search": "1.0.1"}); got["search"] != "2" {
		t.Errorf("valkey-search 1.0.1 is generation %q, want 2", got["search"])
	}
	if got := services.Generations("postgres", map[string]string{"vector": "0.8.0"}); got != nil {
		t.Errorf("postgres generations %v, want none", got)
	}
}
