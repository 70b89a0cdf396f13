package kit

import (
	"errors"
	"strings"
	"testing"

	"github.com/sandboxer/sandboxer/apply"
)

func TestForkRoomCheck(t *testing.T) {
	const gib = 1 << 30
	for _, c := range []struct {
		name string
		room ForkRoom
		want string // "" for room enough
	}{
		{"disk enough", ForkRoom{Bytes: gib, Copies: 3, DiskKB: 5 * gib / 1024, MemKB: 1}, ""},
		{"disk short", ForkRoom{Bytes: gib, Copies: 4, DiskKB: 5 * gib / 1024, MemKB: 1 << 40}, "not enough disk for 4 copies of 1024 MiB"},
		{"tmpfs uses memory", ForkRoom{Bytes: gib, Copies: 4, Tmpfs: true, DiskKB: 1 << 40, MemKB: 5 * gib / 1024}, "not enough memory for 4 copies"},
		{"tmpfs enough", ForkRoom{Bytes: gib, Copies: 1, Tmpfs: true, DiskKB: 0, MemKB: 3 * gib / 1024}, ""},
		{"nothing to copy", ForkRoom{Bytes: 0, Copies: 10}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.room.Host = "the test host"
			err := c.room.Check()
			if c.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "the test host") {
				t.Fatalf("got %v, want %q", err, c.want)
			}
			if !errors.Is(err, apply.ErrNoRoom) {
				t.Errorf("%v is not apply.ErrNoRoom", err)
			}
		})
	}
}
