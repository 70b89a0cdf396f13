package kit

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/services"
)

// ForkRoom is what a fork needs and what the host it runs on has: the
// stage beside the source's data and each of Copies copies of Bytes, on
// disk (volume storage) or in memory (tmpfs).
type ForkRoom struct {
	Bytes  int64
	Copies int
	Tmpfs  bool
	// Host names where the free space was measured, for the refusal
	// ("the engine's host", "the source's node").
	Host string
	// DiskKB and MemKB are the free disk and the available memory.
	DiskKB, MemKB int64
}

// MeasureForkRoom fills in room's DiskKB and MemKB from the source's
// container run: df of dir (of / when dir is not there) and
// /proc/meminfo, which a container sees as its host's.
func MeasureForkRoom(ctx context.Context, run services.Runner, dir string, room ForkRoom) (ForkRoom, error) {
	var out strings.Builder
	script := `df -Pk ` + dir + ` 2>/dev/null | awk 'NR==2 {print $4}' | grep . || df -Pk / | awk 'NR==2 {print $4}'; awk '/^MemAvailable:/ {print $2}' /proc/meminfo`
	if err := run.Exec(ctx, "", []string{"sh", "-c", script}, &out); err != nil {
		return room, fmt.Errorf("measure %s's free disk and memory: %w", room.Host, err)
	}
	f := strings.Fields(out.String())
	if len(f) != 2 {
		return room, fmt.Errorf("measure %s's free disk and memory: got %q", room.Host, out.String())
	}
	disk, err1 := strconv.ParseInt(f[0], 10, 64)
	mem, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil {
		return room, fmt.Errorf("measure %s's free disk and memory: got %q", room.Host, out.String())
	}
	room.DiskKB, room.MemKB = disk, mem
	return room, nil
}

// Check refuses (an error that is apply.ErrNoRoom) a fork the measured
// room cannot hold, with a tenth and 256 MiB to spare for the engine
// and the copies' servers.
func (r ForkRoom) Check() error {
	need := func(b int64) int64 {
		if b == 0 {
			return 0
		}
		return b + b/10 + 256<<20
	}
	var disk, mem int64
	if r.Tmpfs {
		mem = int64(r.Copies+1) * r.Bytes
	} else {
		disk = int64(r.Copies+1) * r.Bytes
	}
	if need(disk) > r.DiskKB*1024 {
		return &ForkRoomError{Msg: fmt.Sprintf("not enough disk for %d copies of %s: they need about %s, %s has %s free; fork fewer copies or free disk",
			r.Copies, MiB(r.Bytes), MiB(need(disk)), r.Host, MiB(r.DiskKB*1024))}
	}
	if need(mem) > r.MemKB*1024 {
		return &ForkRoomError{Msg: fmt.Sprintf("not enough memory for %d copies of %s: they need about %s, %s has %s available; fork fewer copies",
			r.Copies, MiB(r.Bytes), MiB(need(mem)), r.Host, MiB(r.MemKB*1024))}
	}
	return nil
}

// ForkRoomError says a fork was refused before anything started: the
// host lacks the disk or memory its copies need (apply.ErrNoRoom).
type ForkRoomError struct{ Msg string }

func (e *ForkRoomError) Error() string { return e.Msg }

// Unwrap makes the refusal apply.ErrNoRoom.
func (e *ForkRoomError) Unwrap() error { return apply.ErrNoRoom }

// MiB renders b in whole MiB, rounded up.
func MiB(b int64) string { return fmt.Sprintf("%d MiB", (b+(1<<20)-1)>>20) }
