package kubernetes

import (
	"regexp"
	"strings"

	"github.com/sandboxer/sandboxer/providers/internal/kit"
)

// Every object of one instance (pod, Secret, Service, NetworkPolicy)
// shares one name: sbx-<lineage part>-<address part>-g<generation>. It is
// a DNS-1123 label (a Service name must also start with a letter: "sbx"
// does), at most 54 characters up to generation 9999, so the Service's
// DNS name <name>.<namespace>.svc.<cluster domain> is valid too. Names
// carry 12 characters of the lineage, so two states never share one
// (the rule of providers/docker/names.go, with Kubernetes' narrower
// character set: no '.' or '_').

// podName is the name of every object of one instance.
func podName(lineage, address string, generation int) string {
	return kit.InstanceName(lineage, address, generation, dnsSanitize)
}

// labelValueRE is what Kubernetes accepts as a label value (besides "").
var labelValueRE = regexp.MustCompile(`^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$`)

// labelValue fits s into a label value (63 characters of [A-Za-z0-9_.-],
// alphanumeric at both ends): s itself when it fits, else a readable
// prefix and 16 hex digits of its hash. The mapping is a function of s, so
// a selector on labelValue(x) finds what was labelled with x; the exact
// value is kept in an annotation beside it.
func labelValue(s string) string {
	if len(s) <= 63 && labelValueRE.MatchString(s) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 40 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '.', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	prefix := strings.TrimLeft(b.String(), "-_.")
	if prefix == "" {
		return "h" + kit.ShortHash(s, 16)
	}
	return prefix + "-" + kit.ShortHash(s, 16)
}

// dnsSanitize keeps [a-z0-9] and '-' (kit.Sanitize): a DNS-1123 label's
// characters.
func dnsSanitize(s string) string { return kit.Sanitize(s, "") }
