package docker

import (
	"testing"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/mount"
)

// TestVolumeAt finds the volume a path lies on, the deepest mount
// winning, and the path inside it; a tmpfs or a bind is no volume.
func TestVolumeAt(t *testing.T) {
	mounts := []container.MountPoint{
		{Type: mount.TypeTmpfs, Destination: "/var/run/postgresql"},
		{Type: mount.TypeVolume, Name: "outer", Destination: "/var/lib"},
		{Type: mount.TypeVolume, Name: "data", Destination: "/var/lib/postgresql"},
		{Type: mount.TypeBind, Source: "/host", Destination: "/srv"},
	}
	for _, tc := range []struct {
		path, name, rel string
		ok              bool
	}{
		{"/var/lib/postgresql", "data", "", true},
		{"/var/lib/postgresql/18/docker/.sbx-fork-1", "data", "18/docker/.sbx-fork-1", true},
		{"/var/lib/other", "outer", "other", true},
		{"/var/lib/postgresqlx", "outer", "postgresqlx", true},
		{"/var/run/postgresql/x", "", "", false},
		{"/srv/data", "", "", false},
		{"/tmp", "", "", false},
	} {
		name, rel, ok := volumeAt(mounts, tc.path)
		if name != tc.name || rel != tc.rel || ok != tc.ok {
			t.Errorf("volumeAt(%q) = %q, %q, %v; want %q, %q, %v", tc.path, name, rel, ok, tc.name, tc.rel, tc.ok)
		}
	}
}
