package docker

import (
	"errors"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/apply"
)

func TestAdaptTimeout(t *testing.T) {
	for _, tt := range []struct {
		base   time.Duration
		factor float64
		want   time.Duration
	}{
		{time.Minute, 0.3, time.Minute},         // idle: the base
		{time.Minute, 1, time.Minute},           // one per core
		{time.Minute, 4, 4 * time.Minute},       // eight cold starts on two cores
		{time.Minute, 50, 5 * time.Minute},      // at most maxLoadFactor times
		{5 * time.Minute, 4, 10 * time.Minute},  // up to the ceiling
		{20 * time.Minute, 3, 20 * time.Minute}, // a larger base is kept, not scaled past it
	} {
		if got := adaptTimeout(tt.base, tt.factor); got != tt.want {
			t.Errorf("adaptTimeout(%s, %v) = %s, want %s", tt.base, tt.factor, got, tt.want)
		}
	}
}

func TestNotReadyIsTransient(t *testing.T) {
	for _, err := range []error{notReady(time.Minute, nil), notReady(time.Minute, errors.New("connection refused"))} {
		if !errors.Is(err, apply.ErrTransient) {
			t.Errorf("%v: not apply.ErrTransient", err)
		}
	}
}
