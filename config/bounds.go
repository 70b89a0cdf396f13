package config

import (
	"fmt"
	"path"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/distribution/reference"
)

// Bounds on values that validate would otherwise pass and apply (or Docker)
// would fail on, or worse, act on: checked here so a mistake is reported
// with its location before anything starts.
const (
	// MinTTL is the shortest lifetime: a sandbox shorter-lived than this
	// expires before anyone can use it ("1ns" passed validate and was
	// replaced on every plan).
	MinTTL = time.Minute
	// MaxTTL is the longest lifetime, for configuration and for request and
	// extend: sandboxes are disposable. A sandbox that should never expire
	// says ttl = "0" (configuration only).
	MaxTTL = 30 * 24 * time.Hour

	// MinMemoryMB and MaxMemoryMB bound provider memory_mb: below 64 MiB
	// PostgreSQL does not start; 1 TiB is more than any engine here has,
	// and far from where MB→bytes overflows.
	MinMemoryMB = 64
	MaxMemoryMB = 1 << 20
	// MinPidsLimit and MaxPidsLimit bound provider pids_limit: PostgreSQL
	// needs a few dozen processes; Linux allows at most 2^22 pids.
	MinPidsLimit = 32
	MaxPidsLimit = 1 << 22

	// maxModulePath bounds a module path (PATH_MAX).
	maxModulePath = 4096
	// maxEcho is how much of a value a diagnostic repeats.
	maxEcho = 40
)

// quote renders a value for a message: quoted, and cut to a short prefix
// when long, so a megabyte string is not echoed back whole.
func quote(s string) string {
	if len(s) <= maxEcho {
		return strconv.Quote(s)
	}
	cut := maxEcho
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (%d bytes)", strconv.Quote(s[:cut]), len(s))
}

// CheckTTL bounds a parsed lifetime. never says whether 0 ("never
// expires") is allowed, as it is in configuration but not for a request.
func CheckTTL(text string, d time.Duration, never bool) error {
	switch {
	case d == 0 && never && strings.TrimSpace(text) == "0":
		return nil
	case d < MinTTL:
		hint := ""
		if never {
			hint = `; write "0" for a sandbox that never expires`
		}
		return fmt.Errorf("a ttl of %s is shorter than the minimum of %s%s", quote(text), formatTTL(MinTTL), hint)
	case d > MaxTTL:
		return fmt.Errorf("a ttl of %s is longer than the maximum of %s", quote(text), formatTTL(MaxTTL))
	}
	return nil
}

// ParseTTLBounded parses a lifetime and checks it against MinTTL and
// MaxTTL; never allows "0" for never.
func ParseTTLBounded(s string, never bool) (time.Duration, error) {
	d, err := ParseTTL(s)
	if err != nil {
		return 0, err
	}
	if err := CheckTTL(s, d, never); err != nil {
		return 0, err
	}
	return d, nil
}

// formatTTL renders a bound as the user writes one: "1m", "30d".
func formatTTL(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return strings.TrimSuffix(strings.TrimSuffix(d.String(), "0s"), "0m")
}

// CheckImageRef parses an image reference with the distribution reference
// grammar Docker uses: a name, optionally a registry host, a tag and a
// digest. Anything else ("--privileged", spaces, upper case) is refused
// here rather than handed to the engine.
func CheckImageRef(ref string) error {
	if _, err := reference.ParseNormalizedNamed(ref); err != nil {
		return fmt.Errorf("%s is not an image reference: %s", quote(ref), err)
	}
	return nil
}

// CheckModulePath requires an absolute, clean path without spaces or
// control characters: it becomes a redis-server --loadmodule argument.
func CheckModulePath(p string) error {
	switch {
	case p == "":
		return fmt.Errorf("the module path is empty")
	case len(p) > maxModulePath:
		return fmt.Errorf("the module path %s is longer than %d bytes", quote(p), maxModulePath)
	case strings.IndexFunc(p, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) || r == utf8.RuneError }) >= 0:
		return fmt.Errorf("the module path %s contains a space or control character", quote(p))
	case !path.IsAbs(p):
		return fmt.Errorf("the module path %s is not absolute", quote(p))
	case path.Clean(p) != p:
		return fmt.Errorf("the module path %s is not clean; write %s", quote(p), quote(path.Clean(p)))
	}
	return nil
}
