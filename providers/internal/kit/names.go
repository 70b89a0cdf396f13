package kit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Every runtime names an instance's objects sbx-<lineage part>-<address
// part>-g<generation>, each part in its own character set (sanitize:
// Docker's [a-z0-9_.-], Kubernetes' DNS labels [a-z0-9-]; it lower-cases,
// turns every other run of characters into one '-' and trims separators
// from both ends).

// maxAddrPart bounds the address part of a name so that names stay
// readable and within the 63-character DNS label limit (network aliases,
// host names, Service names), up to generation 9999.
const maxAddrPart = 24

// InstanceName is the name an instance's objects share (Docker's
// containers add -<service>).
func InstanceName(lineage, address string, generation int, sanitize func(string) string) string {
	return fmt.Sprintf("sbx-%s-%s-g%d", LineagePart(lineage, sanitize), AddressPart(address, sanitize), generation)
}

// LineagePart is the 12 characters of the lineage that every name of its
// instances carries. A lineage sandboxer made (a random UUID) gives its
// first 12 hex digits, 48 random bits: two states on one engine share them
// with odds of about 1 in 10^7 even at ten thousand states. Any other
// lineage (tests make their own) gives up to 4 readable characters and 28
// bits of its hash, so lineages with a common prefix never share names.
// Eight characters, as names had before, let two test runs whose lineages
// began alike collide on one engine.
func LineagePart(lineage string, sanitize func(string) string) string {
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
	return s + "-" + ShortHash(lineage, 7)
}

// AddressPart turns an address into the safe, lower-case part of a name.
// "sandbox.ci" becomes "ci"; when sanitizing loses information
// (sandbox.agent["dev-7"] → agent-dev-7) or the result is truncated, a
// short hash of the full address is appended so that distinct addresses
// never share a name.
func AddressPart(address string, sanitize func(string) string) string {
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
	return s + "-" + ShortHash(address, 6)
}

// Sanitize keeps [a-z0-9] and the characters of keep, lower-cases
// letters, turns every other run of characters into one '-', and trims
// '-' and keep's characters from both ends.
func Sanitize(s, keep string) string {
	var b strings.Builder
	dash := false
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', strings.ContainsRune(keep, r):
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
	return strings.Trim(b.String(), "-"+keep)
}

// ShortHash is the first n hex digits of s's SHA-256.
func ShortHash(s string, n int) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])[:n]
}

func isLowerHex(s string) bool {
	for _, r := range s {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}
