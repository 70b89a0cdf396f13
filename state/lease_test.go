package state_test

import (
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/state"
)

// TestLeaseAlive is the liveness rule on its own: expiry, and a vanished
// pid on this host; another host's pid is not looked at.
func TestLeaseAlive(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	dead := cmd.Process.Pid // reaped: gone
	now := time.Now()
	host := state.Hostname()
	for _, tt := range []struct {
		name string
		l    state.Lease
		want bool
	}{
		{"live", state.Lease{Host: host, PID: os.Getpid(), Expires: now.Add(time.Second)}, true},
		{"expired", state.Lease{Host: host, PID: os.Getpid(), Expires: now}, false},
		{"pid gone here", state.Lease{Host: host, PID: dead, Expires: now.Add(time.Hour)}, false},
		{"pid of another host", state.Lease{Host: host + "-other", PID: dead, Expires: now.Add(time.Hour)}, true},
	} {
		if got := tt.l.Alive(now, host); got != tt.want {
			t.Errorf("%s: Alive = %v, want %v", tt.name, got, tt.want)
		}
	}
}
