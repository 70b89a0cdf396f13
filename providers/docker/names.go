package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// maxAddrPart bounds the address part of a name so that names stay readable
// and well under the 63-character DNS label limit that network aliases and
// host names share.
const maxAddrPart = 28

// networkName is the per-instance bridge network:
// sbx-<lineage[:8]>-<addr>-g<gen>.
func networkName(lineage, address string, generation int) string {
	return fmt.Sprintf("sbx-%s-%s-g%d", lineagePart(lineage), addressPart(address), generation)
}

// containerName is one service's container: the network name plus -<svc>.
func containerName(lineage, address string, generation int, service string) string {
	return networkName(lineage, address, generation) + "-" + sanitize(service)
}

func lineagePart(lineage string) string {
	s := sanitize(lineage)
	if len(s) > 8 {
		s = s[:8]
	}
	if s == "" {
		s = "x"
	}
	return s
}

// addressPart turns an address into the Docker-safe, lower-case part of a
// name. "sandbox.ci" becomes "ci"; when sanitizing loses information
// (sandbox.agent["dev-7"] → agent-dev-7) or the result is truncated, a short
// hash of the full address is appended so that distinct addresses never
// share a name.
func addressPart(address string) string {
	rest, hadPrefix := strings.CutPrefix(address, "sandbox.")
	s := sanitize(rest)
	lossless := hadPrefix && s == rest
	if len(s) > maxAddrPart {
		s = strings.TrimRight(s[:maxAddrPart], "-.")
		lossless = false
	}
	if s == "" {
		s = "x"
		lossless = false
	}
	if lossless {
		return s
	}
	sum := sha256.Sum256([]byte(address))
	return s + "-" + hex.EncodeToString(sum[:])[:6]
}

// sanitize keeps [a-z0-9_.-], lower-cases letters, turns every other run of
// characters into one '-', and trims separators from both ends so the result
// can follow a '-' in a Docker name ([a-zA-Z0-9][a-zA-Z0-9_.-]*).
func sanitize(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '.':
			b.WriteRune(r)
			dash = false
		case r >= 'A' && r <= 'Z':
			b.WriteRune(r - 'A' + 'a')
			dash = false
		default:
			if !dash {
				b.WriteByte('-')
				dash = true
			}
		}
	}
	return strings.Trim(b.String(), "-._")
}
