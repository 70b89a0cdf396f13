package docker

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/sandboxer/sandboxer/providers/internal/kit"
)

// instanceName is the common prefix of an instance's containers:
// sbx-<lineage part>-<address part>-g<gen> (kit.InstanceName in Docker's
// character set: sanitize).
func instanceName(lineage, address string, generation int) string {
	return kit.InstanceName(lineage, address, generation, sanitize)
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

// sanitize keeps [a-z0-9_.-] (kit.Sanitize), so the result can follow a
// '-' in a Docker name ([a-zA-Z0-9][a-zA-Z0-9_.-]*).
func sanitize(s string) string { return kit.Sanitize(s, "_.") }
