package kubernetes

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/sandboxer/sandboxer/config"
	pgsvc "github.com/sandboxer/sandboxer/services/postgres"
	redissvc "github.com/sandboxer/sandboxer/services/redis"
)

// Where things are inside a sandbox's containers.
const (
	// secretDir is where each service's part of the instance's Secret is
	// mounted, read-only.
	secretDir = "/etc/sandboxer"
	// tlsDir is where each service finds its TLS key and certificates
	// (an in-memory emptyDir filled before the services start, tls.go).
	tlsDir = "/etc/sandboxer-tls"
	// dataRoot is the emptyDir a service that keeps data keeps it in
	// (services.Placement.DataRoot; PostgreSQL makes its data directory
	// a subdirectory: the volume's root belongs to root).
	dataRoot = "/var/lib/sandboxer"
)

// The keys of the instance's Secret are the names of the services' start
// files (services.Start.Files). Each service's container mounts only its
// own keys (secretItems), so Redis never sees PostgreSQL's admin
// password.
const keyRedisACL = redissvc.ACLFileName // the redis ACL file's key in a secret

// terminationGrace is short: a sandbox holds nothing worth a graceful
// shutdown, and a pod delete waits for it (the default 30 s made every
// delete of a PID 1 that ignores SIGTERM take that long).
const terminationGrace = 2

// requestFraction: a container requests 1/16 of its memory limit (at
// least 16 MiB), what an idle sandbox uses (PostgreSQL about 45–55 MB,
// Redis a few MB). Requesting the limit would let a node of 8 GiB
// schedule only a handful of sandboxes that each sit nearly idle.
const requestFraction = 16

// serviceRun is how one service's container runs.
type serviceRun struct {
	Name    string
	Image   string
	Command []string // nil: the image's entrypoint
	Args    []string
	Env     []corev1.EnvVar
	Port    int
	Facts   imageFacts
	// Keys are the instance Secret's keys its container sees, in
	// secretDir (secretItems).
	Keys []string
	// SecretFiles mount single keys of the Secret elsewhere, path → key
	// (PostgreSQL's init script, beside whatever the image ships there).
	SecretFiles map[string]string
	// DataDir, when set, is a directory on an emptyDir volume of its own
	// named DataVolume (a tmpfs with provider storage "tmpfs").
	DataVolume, DataDir string
	// EmptyDirs are empty directories mounted read-only
	// (services.Start.EmptyDirs: MySQL's secure_file_priv).
	EmptyDirs []string
	// Projected, when set, is mounted read-only at pgsvc.TemplateMount
	// (a template's parts, pgtemplate.go).
	Projected *corev1.ProjectedVolumeSource
	// ForkVolume, when set, is an emptyDir at forkDir that an init
	// container holds until a fork's captured file is in it (fork.go).
	ForkVolume string
}

// podSpec is the whole pod of one instance. fsGroup is the first
// service's group (PostgreSQL's when it runs): the Secret's files are
// 0440 root:fsGroup, readable by every container of the pod, each of
// which mounts only its own keys.
func (p *Provider) podSpec(meta metav1.ObjectMeta, runs []serviceRun, withTLS bool, tlsWriter *serviceRun) *corev1.Pod {
	pod := &corev1.Pod{ObjectMeta: meta}
	spec := &pod.Spec
	spec.RestartPolicy = corev1.RestartPolicyNever
	spec.AutomountServiceAccountToken = ptr.To(false)
	spec.EnableServiceLinks = ptr.To(false)
	spec.TerminationGracePeriodSeconds = ptr.To[int64](terminationGrace)
	spec.SecurityContext = &corev1.PodSecurityContext{
		SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
	if len(runs) > 0 {
		spec.SecurityContext.FSGroup = ptr.To(runs[0].Facts.GID)
	}
	var forkInits []corev1.Container
	for _, r := range runs {
		vol := "secret-" + r.Name
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: vol, VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: meta.Name, Items: secretItems(r.Keys), DefaultMode: ptr.To[int32](0o440)},
		}})
		c := corev1.Container{
			Name:            r.Name,
			Image:           r.Image,
			ImagePullPolicy: corev1.PullIfNotPresent,
			Command:         r.Command,
			Args:            r.Args,
			Env:             r.Env,
			Ports:           []corev1.ContainerPort{{Name: portName(r.Name), ContainerPort: int32(r.Port), Protocol: corev1.ProtocolTCP}},
			SecurityContext: containerSecurity(r.Facts),
			Resources:       p.resources(),
			VolumeMounts:    []corev1.VolumeMount{{Name: vol, MountPath: secretDir, ReadOnly: true}},
			// The log is the error's explanation when the container stops.
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		}
		for _, mp := range slices.Sorted(maps.Keys(r.SecretFiles)) {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: vol, MountPath: mp, SubPath: r.SecretFiles[mp], ReadOnly: true})
		}
		if r.DataDir != "" {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: r.DataVolume, MountPath: r.DataDir})
			ed := &corev1.EmptyDirVolumeSource{}
			if p.cfg.Storage == config.StorageTmpfs {
				ed.Medium = corev1.StorageMediumMemory
			}
			spec.Volumes = append(spec.Volumes, corev1.Volume{Name: r.DataVolume, VolumeSource: corev1.VolumeSource{EmptyDir: ed}})
		}
		for i, dir := range r.EmptyDirs {
			name := fmt.Sprintf("empty-%s-%d", dnsSanitize(r.Name), i)
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: name, MountPath: dir, ReadOnly: true})
			spec.Volumes = append(spec.Volumes, corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{
				EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: resource.NewQuantity(4<<10, resource.BinarySI)}}})
		}
		if r.Projected != nil {
			spec.Volumes = append(spec.Volumes, corev1.Volume{Name: templateVolume, VolumeSource: corev1.VolumeSource{Projected: r.Projected}})
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: templateVolume, MountPath: pgsvc.TemplateMount, ReadOnly: true})
		}
		if withTLS {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: "tls", MountPath: tlsDir, SubPath: r.Name, ReadOnly: true})
		}
		if r.ForkVolume != "" {
			c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: r.ForkVolume, MountPath: forkDir})
			ed := &corev1.EmptyDirVolumeSource{}
			if p.cfg.Storage == config.StorageTmpfs {
				ed.Medium = corev1.StorageMediumMemory
			}
			spec.Volumes = append(spec.Volumes, corev1.Volume{Name: r.ForkVolume, VolumeSource: corev1.VolumeSource{EmptyDir: ed}})
			forkInits = append(forkInits, forkInitContainer(r, p.resources()))
		}
		spec.Containers = append(spec.Containers, c)
	}
	if withTLS && tlsWriter != nil {
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "tls", VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory},
		}})
		spec.InitContainers = []corev1.Container{tlsInitContainer(*tlsWriter, p.resources())}
	}
	// A fork's init containers run after TLS's: the files are handed to
	// each in turn.
	spec.InitContainers = append(spec.InitContainers, forkInits...)
	return pod
}

// portName is a container port's name (an IANA_SVC_NAME: at most 15
// characters, letters, digits and '-').
func portName(service string) string {
	n := dnsSanitize(service)
	if len(n) > 15 {
		n = n[:15]
	}
	return n
}

// containerSecurity runs a service as the image's own service user (found
// by the image inspection, never assumed), so the official entrypoints
// skip their root-only steps (chown, setpriv) and need no capability at
// all: every one is dropped, and nothing can gain one back.
func containerSecurity(f imageFacts) *corev1.SecurityContext {
	return &corev1.SecurityContext{
		Privileged:               ptr.To(false),
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		RunAsUser:                ptr.To(f.UID),
		RunAsGroup:               ptr.To(f.GID),
		RunAsNonRoot:             ptr.To(f.UID != 0),
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// resources: the memory limit is the configuration's memory_mb per
// container, as on Docker; the request a fraction of it (requestFraction).
// pids_limit has no per-pod setting in the API: it is the kubelet's
// podPidsLimit, node-wide, and not set here.
func (p *Provider) resources() corev1.ResourceRequirements {
	var r corev1.ResourceRequirements
	if mb := p.cfg.MemoryMB; mb > 0 {
		req := max(mb/requestFraction, 16)
		r.Limits = corev1.ResourceList{corev1.ResourceMemory: *resource.NewQuantity(mb<<20, resource.BinarySI)}
		r.Requests = corev1.ResourceList{
			corev1.ResourceMemory: *resource.NewQuantity(min(req, mb)<<20, resource.BinarySI),
			corev1.ResourceCPU:    resource.MustParse("10m"),
		}
	}
	return r
}

// secretItems are the keys of the instance's Secret a service's container
// sees (serviceRun.Keys).
func secretItems(keys []string) []corev1.KeyToPath {
	items := make([]corev1.KeyToPath, len(keys))
	for i, k := range keys {
		items[i] = corev1.KeyToPath{Key: k, Path: k}
	}
	return items
}

// secretSpec is the instance's Secret: the admin password file (the
// official image's POSTGRES_PASSWORD_FILE), the init script (a SCRAM
// verifier, no clear password), the TLS-only hba file, the Redis ACL file
// (SHA-256 hashes only). Immutable: nothing ever changes it, and the
// kubelet then need not watch it.
func secretSpec(meta metav1.ObjectMeta, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: meta, Type: corev1.SecretTypeOpaque, Data: data, Immutable: ptr.To(true)}
}

// envVars turns NAME=value pairs into the API's form.
func envVars(pairs []string) []corev1.EnvVar {
	out := make([]corev1.EnvVar, 0, len(pairs))
	for _, kv := range pairs {
		for i := 0; i < len(kv); i++ {
			if kv[i] == '=' {
				out = append(out, corev1.EnvVar{Name: kv[:i], Value: kv[i+1:]})
				break
			}
		}
	}
	return out
}

// describe is a pod's one-line state for errors.
func describe(pod *corev1.Pod) string {
	if pod == nil {
		return "gone"
	}
	s := string(pod.Status.Phase)
	if pod.DeletionTimestamp != nil {
		s += ", being deleted"
	}
	for _, cs := range append(append([]corev1.ContainerStatus(nil), pod.Status.InitContainerStatuses...), pod.Status.ContainerStatuses...) {
		switch {
		case cs.State.Waiting != nil && cs.State.Waiting.Reason != "":
			s += fmt.Sprintf("; %s waiting: %s", cs.Name, cs.State.Waiting.Reason)
		case cs.State.Terminated != nil:
			s += fmt.Sprintf("; %s exited with code %d (%s)", cs.Name, cs.State.Terminated.ExitCode, cs.State.Terminated.Reason)
		}
	}
	return s
}
