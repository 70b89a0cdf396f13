package docker

import (
	"bytes"
	"os"
	"runtime"
	"strconv"
	"time"
)

// Readiness under load: a service that starts in 2 s on an idle machine
// can take minutes when eight start at once on two cores. The timeout
// grows with the load instead of failing a burst at a fixed minute.
const (
	// maxLoadFactor bounds the scaling of the readiness timeout.
	maxLoadFactor = 5
	// readyCeiling bounds a scaled timeout (a larger configured one is
	// kept as it is).
	readyCeiling = 10 * time.Minute
)

// adaptTimeout scales base by factor (at least 1), up to the ceiling.
func adaptTimeout(base time.Duration, factor float64) time.Duration {
	factor = min(max(factor, 1), maxLoadFactor)
	d := time.Duration(float64(base) * factor)
	return min(d, max(base, readyCeiling))
}

// loadFactor is how many times over the machine is busy: the larger of
// this provider's services waiting to become ready and the one-minute
// load average (every process on the machine), each per core.
func (p *Provider) loadFactor() float64 {
	cores := float64(runtime.NumCPU())
	f := float64(p.waiting.Load()) / cores
	if l, ok := loadAverage(); ok {
		f = max(f, l/cores)
	}
	return f
}

// loadAverage reads the one-minute load average (Linux; elsewhere ok is
// false and only this process's waits count).
func loadAverage() (float64, bool) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, false
	}
	first, _, _ := bytes.Cut(b, []byte(" "))
	l, err := strconv.ParseFloat(string(first), 64)
	return l, err == nil
}
