package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// ParseTTL parses a sandbox lifetime: a Go duration ("90m", "4h30m") that
// may also use a "d" suffix for days of 24 hours ("7d", "1d12h"). "0" means
// never expires. Negative lifetimes are refused. The CLI uses it for --ttl
// too, so flags and HCL accept the same text; ParseTTLBounded also applies
// MinTTL and MaxTTL.
func ParseTTL(s string) (time.Duration, error) {
	if s == "0" {
		return 0, nil
	}
	if s == "" {
		return 0, fmt.Errorf("empty ttl")
	}
	if strings.HasPrefix(s, "-") {
		return 0, fmt.Errorf("invalid ttl %s: must not be negative", quote(s))
	}
	// Split off whole or fractional days, then hand the rest to Go.
	var total time.Duration
	rest := s
	for {
		i := 0
		for i < len(rest) && (rest[i] == '.' || (rest[i] >= '0' && rest[i] <= '9')) {
			i++
		}
		if i == 0 || i >= len(rest) || rest[i] != 'd' {
			break
		}
		days, err := strconv.ParseFloat(rest[:i], 64)
		if err != nil {
			return 0, fmt.Errorf("invalid ttl %s", quote(s))
		}
		d := days * float64(24*time.Hour)
		if d > math.MaxInt64-float64(total) {
			return 0, fmt.Errorf("invalid ttl %s: too long", quote(s))
		}
		total += time.Duration(d)
		rest = rest[i+1:]
	}
	if rest != "" {
		d, err := time.ParseDuration(rest)
		if err != nil || d < 0 {
			return 0, fmt.Errorf("invalid ttl %s", quote(s))
		}
		if d > math.MaxInt64-total {
			return 0, fmt.Errorf("invalid ttl %s: too long", quote(s))
		}
		total += d
	}
	return total, nil
}
