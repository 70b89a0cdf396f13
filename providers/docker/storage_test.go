package docker

import (
	"context"
	"testing"

	pgsvc "github.com/sandboxer/sandboxer/services/postgres"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
)

// TestCreateStorage: the data directory goes where the provider's storage
// says: a labelled anonymous volume by default (TestCreatePostgresRedis
// checks its labels), a tmpfs and no volume at all with storage = "tmpfs".
// Either way the sandbox works and Delete leaves nothing.
func TestCreateStorage(t *testing.T) {
	t.Parallel()
	for _, storage := range []string{config.StorageVolume, config.StorageTmpfs} {
		t.Run(storage, func(t *testing.T) {
			t.Parallel()
			requireImages(t)
			cfg := testConfig()
			cfg.Storage = storage
			p, err := New(context.Background(), cfg, config.DefaultCatalog())
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { p.Close() })
			lineage := newLineage(t, p)
			req := apply.CreateRequest{Address: "sandbox.store", Lineage: lineage, Generation: 1,
				Features: config.FeatureSet{"postgres": {}}}
			created, err := p.Create(context.Background(), req)
			if err != nil {
				t.Fatalf("Create: %v", err)
			}
			ci, err := p.cli.ContainerInspect(context.Background(), created.Resources.Containers["postgres"])
			if err != nil {
				t.Fatal(err)
			}
			_, onTmpfs := ci.HostConfig.Tmpfs[defaultPGDATA]
			var volumes int
			for _, m := range ci.Mounts {
				// The template a sandbox starts from is mounted read-only
				// (pgtemplate.go); it is not the sandbox's storage.
				if m.Type == "volume" && m.Destination != pgsvc.TemplateMount {
					volumes++
				}
			}
			switch storage {
			case config.StorageTmpfs:
				if !onTmpfs || volumes != 0 {
					t.Errorf("tmpfs storage: tmpfs on %s %v, %d volumes", defaultPGDATA, onTmpfs, volumes)
				}
			default:
				if onTmpfs || volumes != 1 {
					t.Errorf("volume storage: tmpfs on %s %v, %d volumes", defaultPGDATA, onTmpfs, volumes)
				}
			}
			pg := created.Credentials["postgres"]
			if err := pgsvc.Ping(context.Background(), pg.Host, pg.Port, pg.User, pg.Password, pg.Database, nil); err != nil {
				t.Errorf("app role: %v", err)
			}
			if err := p.Delete(context.Background(), recordFor(req, created)); err != nil {
				t.Fatal(err)
			}
			assertNothingLabelled(t, p, lineage)
		})
	}
}
