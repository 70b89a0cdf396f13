package docker

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
)

// dfRunner answers checkForkRoom's exec with free disk and memory, in KiB.
type dfRunner struct{ answer string }

func (r dfRunner) Exec(_ context.Context, _ string, _ []string, stdout io.Writer) error {
	_, err := io.WriteString(stdout, r.answer)
	return err
}

func (dfRunner) CopyIn(context.Context, string, map[string]string, map[string][]byte) error {
	return nil
}

// The room check refuses, before anything starts, a fork whose copies
// would not fit the host's disk (volume storage) or memory (tmpfs), and
// says how much they need and how much there is.
func TestForkRoom(t *testing.T) {
	const gib = int64(1) << 30
	for _, tc := range []struct {
		storage, answer string
		bytes           int64
		n               int
		want            string // "" for room enough
	}{
		{config.StorageVolume, "104857600 8388608", gib, 10, ""},                                                                    // 100 GiB disk, 8 GiB memory
		{config.StorageVolume, "10485760 8388608", gib, 10, "not enough disk for 10 copies of 1024 MiB: they need about 12647 MiB"}, // 10 GiB disk
		{config.StorageTmpfs, "104857600 8388608", gib, 10, "not enough memory for 10 copies"},                                      // 8 GiB memory
		{config.StorageTmpfs, "104857600 33554432", gib, 10, ""},                                                                    // 32 GiB memory
	} {
		p := &Provider{cfg: &config.Provider{Storage: tc.storage}}
		err := p.checkForkRoom(context.Background(), dfRunner{tc.answer}, tc.bytes, tc.n)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s %s: %v, want room", tc.storage, tc.answer, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, apply.ErrNoRoom)):
			t.Errorf("%s %s: %v, want ErrNoRoom saying %q", tc.storage, tc.answer, err, tc.want)
		}
	}
	p := &Provider{cfg: &config.Provider{}}
	if err := p.checkForkRoom(context.Background(), dfRunner{"garbage"}, gib, 1); err == nil {
		t.Error("an unreadable answer passed the check")
	}
}

// volumesRoot is the deepest directory holding every volume's mount
// point, never the root (a helper binds it to rename the stage into the
// base), and viaBind is a host path inside that helper.
func TestVolumesRoot(t *testing.T) {
	for _, tc := range []struct {
		dirs []string
		want string
	}{
		{[]string{"/var/lib/docker/volumes/a/_data", "/var/lib/docker/volumes/b/_data"}, "/var/lib/docker/volumes"},
		{[]string{"/var/lib/docker/volumes/a/_data", "/var/lib/docker/volumes/a/_data"}, "/var/lib/docker/volumes/a/_data"},
		{[]string{"/var/lib/docker/volumes/ab/_data", "/var/lib/docker/volumes/a/_data"}, "/var/lib/docker/volumes"},
		{[]string{"/srv/v/a", "/var/lib/docker/volumes/b/_data"}, ""},
		{[]string{"/var/lib/docker/volumes/a/_data", "relative/b"}, ""},
		{[]string{"/data/a/", "/data/b"}, "/data"},
	} {
		if got := volumesRoot(tc.dirs...); got != tc.want {
			t.Errorf("volumesRoot(%q) = %q, want %q", tc.dirs, got, tc.want)
		}
	}
	if got := viaBind("/var/lib/docker/volumes", "/var/lib/docker/volumes/b/_data/l-postgres"); got != volumesBind+"/b/_data/l-postgres" {
		t.Errorf("viaBind = %q", got)
	}
}
