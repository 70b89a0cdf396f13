package helm

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// restrictedViolations lists how spec falls short of the restricted Pod
// Security Standard (the baseline checks that a chart could trip, and
// every restricted one), plus this chart's own rule of a read-only root
// filesystem; empty when it meets them.
// https://kubernetes.io/docs/concepts/security/pod-security-standards/
func restrictedViolations(spec corev1.PodSpec) []string {
	var out []string
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		out = append(out, "host namespaces")
	}
	psc := spec.SecurityContext
	if psc == nil {
		psc = &corev1.PodSecurityContext{}
	}
	if len(psc.Sysctls) > 0 {
		out = append(out, "pod sysctls")
	}
	if psc.RunAsUser != nil && *psc.RunAsUser == 0 {
		out = append(out, "pod runAsUser 0")
	}
	if psc.SeccompProfile != nil && !allowedSeccomp(psc.SeccompProfile) {
		out = append(out, "pod seccompProfile "+string(psc.SeccompProfile.Type))
	}
	for _, v := range spec.Volumes {
		if !allowedVolume(v) {
			out = append(out, "volume "+v.Name+" of a type restricted forbids")
		}
	}
	var all []corev1.Container
	all = append(all, spec.InitContainers...)
	all = append(all, spec.Containers...)
	for _, c := range all {
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				out = append(out, c.Name+": hostPort")
			}
		}
		sc := c.SecurityContext
		if sc == nil {
			out = append(out, c.Name+": no securityContext")
			continue
		}
		bad := func(what string) { out = append(out, fmt.Sprintf("%s: %s", c.Name, what)) }
		if sc.Privileged != nil && *sc.Privileged {
			bad("privileged")
		}
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			bad("allowPrivilegeEscalation must be false")
		}
		if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
			bad("capabilities must drop ALL")
		} else {
			for _, a := range sc.Capabilities.Add {
				if a != "NET_BIND_SERVICE" {
					bad("adds capability " + string(a))
				}
			}
		}
		nonRoot := (sc.RunAsNonRoot != nil && *sc.RunAsNonRoot) ||
			(sc.RunAsNonRoot == nil && psc.RunAsNonRoot != nil && *psc.RunAsNonRoot)
		if !nonRoot {
			bad("runAsNonRoot must be true (container or pod)")
		}
		uid := psc.RunAsUser
		if sc.RunAsUser != nil {
			uid = sc.RunAsUser
		}
		if uid == nil || *uid == 0 {
			bad("runAsUser must be set and not 0")
		}
		switch {
		case sc.SeccompProfile != nil:
			if !allowedSeccomp(sc.SeccompProfile) {
				bad("seccompProfile " + string(sc.SeccompProfile.Type))
			}
		case psc.SeccompProfile == nil:
			bad("no seccompProfile (container or pod)")
		}
		if sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount {
			bad("procMount")
		}
		if sc.SELinuxOptions != nil && (sc.SELinuxOptions.User != "" || sc.SELinuxOptions.Role != "") {
			bad("seLinuxOptions user/role")
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			bad("readOnlyRootFilesystem must be true")
		}
	}
	return out
}

func allowedSeccomp(p *corev1.SeccompProfile) bool {
	return p.Type == corev1.SeccompProfileTypeRuntimeDefault || p.Type == corev1.SeccompProfileTypeLocalhost
}

// allowedVolume: the volume types the restricted level admits.
func allowedVolume(v corev1.Volume) bool {
	s := v.VolumeSource
	return s.ConfigMap != nil || s.CSI != nil || s.DownwardAPI != nil || s.EmptyDir != nil ||
		s.Ephemeral != nil || s.PersistentVolumeClaim != nil || s.Projected != nil || s.Secret != nil
}
