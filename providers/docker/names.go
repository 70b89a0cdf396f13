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

// instanceName is the common prefix of an instance's containers:
// sbx-<lineage[:8]>-<addr>-g<gen>.
func instanceName(lineage, address string, generation int) string {
	return fmt.Sprintf("sbx-%s-%s-g%d", lineagePart(lineage), addressPart(address), generation)
}

// containerName is one service's container: the instance name plus -<svc>.
func containerName(lineage, address string, generation int, service string) string {
	return instanceName(lineage, address, generation) + "-" + sanitize(service)
}

// lineageNetworkName is the network all sandboxes of a lineage share:
// sbx-net-<lineage>. The whole lineage is in it (not 8 characters, as in
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
