package state

import (
	"context"
	"errors"

	"syscall"
	"time"
)

// Lease says that a holder (one agent session, in some process on some
// machine sharing the state) still uses an instance. Leases are how a
// "last one out" rule (release-on-disconnect) sees holders in other
// processes: a holder renews its leases while it lives (a heartbeat) and
// drops them when it ends; one that dies without dropping them is found
// dead by its lease expiring, or at once by its pid vanishing on this
// host (Alive).
//
// Leases are not records: writing one never moves the serial, takes no
// backup and holds nothing secret.
type Lease struct {
	// Address is the instance held.
	Address string `json:"address"`
	// Holder names the holder, unique per session (and so per process).
	Holder string `json:"holder"`
	// Host and PID are the holding process's.
	Host string `json:"host"`
	PID  int    `json:"pid"`
	// Expires is when the lease is dead unless renewed.
	Expires time.Time `json:"expires"`
	// Release says the holder releases the instance when it is the last
	// one to go (release-on-disconnect): if it dies instead, the reaper
	// releases the instance once no live lease is left.
	Release bool `json:"release,omitempty"`
}

// Leases is the part of a Backend that keeps leases.
type Leases interface {
	// Hold records l, or renews it (same Address and Holder).
	Hold(ctx context.Context, l Lease) error
	// Unhold drops one holder's lease; dropping an absent one is no error.
	Unhold(ctx context.Context, addr, holder string) error
	// HeldBy lists the leases on addr, dead or alive, sorted by holder;
	// addr "" lists every lease.
	HeldBy(ctx context.Context, addr string) ([]Lease, error)
}

// Alive reports whether the lease's holder may still be there at now: it
// has not expired and, on this host, its process still exists.
func (l Lease) Alive(now time.Time, host string) bool {
	if !now.Before(l.Expires) {
		return false
	}
	if l.Host == host && l.PID > 0 && !pidAlive(l.PID) {
		return false
	}
	return true
}

// Hostname is the name leases and locks record for this host.
func Hostname() string { return hostname() }

func pidAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}

// checkLease refuses a lease without what identifies it.
func checkLease(l Lease) error {
	if l.Address == "" || l.Holder == "" {
		return errors.New("hold: a lease needs an address and a holder")
	}
	return nil
}
