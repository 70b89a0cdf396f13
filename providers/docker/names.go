package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// maxAddrPart bounds the address part of a name so that names stay readable
// and within the 63-character DNS label limit that network aliases and host
// names share (a container name is its DNS name on user networks), up to
// generation 9999.
const maxAddrPart = 24

// instanceName is the common prefix of an instance's containers:
// sbx-<lineagePart>-<addr>-g<gen>.
func instanceName(lineage, address string, generation int) string {
	return fmt.Sprintf("sbx-%s-%s-g%d", lineagePart(lineage), addressPart(address), generation)
}

// containerName is one service's container: the instance name plus -<svc>.
func containerName(lineage, address string, generation int, service string) string {
	return instanceName(lineage, address, generation) + "-" + sanitize(service)
}

// lineageNetworkName is the network all sandboxes of a lineage share:
// sbx-net-<lineage>. The whole lineage is in it (not 12 characters, as in
// container names) because two lineages must never share a network name;
// a lineage that is not already a safe name part, or is long, is shortened
// and given a hash of the full value.
func lineageNetworkName(lineage string) string {
	s := sanitize(lineage)
	if s == lineage && s != "" && len(s) <= 40 {
		return "sbx-net-" + s
	}
	if len(s) > 24 {
		s = strings.TrimRight(s[:24], "-._")
	}
	if s == "" {
		s = "x"
	}
	sum := sha256.Sum256([]byte(lineage))
	return "sbx-net-" + s + "-" + hex.EncodeToString(sum[:])[:8]
}

// lineagePart is the 12 characters of the lineage that every name of its
// instances carries. A lineage sandboxer made (a random UUID) gives its
// first 12 hex digits, 48 random bits: two states on one engine share them
// with odds of about 1 in 10^7 even at ten thousand states. Any other
// lineage (tests make their own) gives up to 4 readable characters and 28
// bits of its hash, so lineages with a common prefix never share names.
// Eight characters, as names had before, let two test runs whose lineages
// began alike collide on one engine.
func lineagePart(lineage string) string {
	if h := strings.ReplaceAll(lineage, "-", ""); len(h) >= 12 && isLowerHex(h) {
		return h[:12]
	}
	s := sanitize(lineage)
	if len(s) > 4 {
		s = strings.TrimRight(s[:4], "-._")
	}
	if s == "" {
		s = "x"
	}
	sum := sha256.Sum256([]byte(lineage))
	return s + "-" + hex.EncodeToString(sum[:])[:7]
}

func isLowerHex(s string) bool {
	for _, r := range s {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
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
