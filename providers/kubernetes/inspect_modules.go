package kubernetes

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/redact"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/services"
	redissvc "github.com/sandboxer/sandboxer/services/redis"
	"github.com/sandboxer/sandboxer/state"
)

// moduleFeatures finds which allowed features an image of a service
// whose features are Redis-style modules (services.ModuleLoader: Redis,
// Valkey) provides by loading them, not by looking for files (a module
// can be built for another server or CPU, and one the image loads by
// itself has no path). It starts the image as a sandbox starts it (its
// entrypoint, as the service user f names, so an entrypoint that adds
// --loadmodule does so here too), reads which modules are loaded, then
// MODULE LOADs each configured module that is not. The server is
// throwaway: its admin is the only user, MODULE is enabled for it, and
// the pod goes when done.
func (p *Provider) moduleFeatures(ctx context.Context, s services.Service, ml services.ModuleLoader, img config.Image, f *imageFacts) error {
	admin, err := redact.NewPassword()
	if err != nil {
		return err
	}
	svc := s.Name()
	c := state.Credentials{User: "sbx_inspect", Password: admin, AdminUser: "sbx_admin", AdminPassword: admin}
	name := "sbx-inspect-" + svc + "-" + randomSuffix()
	pod := p.inspectionPod(name, img.Ref, nil, containerSecurity(*f))
	ctr := &pod.Spec.Containers[0]
	st := ml.InspectStart(c, secretDir)
	ctr.Args = st.Args
	ctr.VolumeMounts = []corev1.VolumeMount{{Name: "secret", MountPath: secretDir, ReadOnly: true}}
	ctr.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
	pod.Spec.SecurityContext.FSGroup = ptr.To(f.GID)
	pod.Spec.Volumes = []corev1.Volume{{Name: "secret", VolumeSource: corev1.VolumeSource{
		Secret: &corev1.SecretVolumeSource{SecretName: name, DefaultMode: ptr.To[int32](0o440)},
	}}}
	secret := secretSpec(pod.ObjectMeta, st.Files)
	running, err := p.runInspection(ctx, pod, secret)
	defer p.deleteInspection(ctx, name)
	if err != nil {
		return err
	}
	c.Host, c.Port = running.Status.PodIP, s.Port()
	rctx, cancel := context.WithTimeout(ctx, p.readyTimeout())
	defer cancel()
	if err := pollReady(rctx, func(ctx context.Context) error {
		return redissvc.Ping(ctx, c.Host, c.Port, c.AdminUser, c.AdminPassword, nil)
	}); err != nil {
		return fmt.Errorf("the %s server did not start: %w", svc, err)
	}
	rdb := redissvc.Client(c.Host, c.Port, c.AdminUser, c.AdminPassword, nil)
	defer rdb.Close()
	loaded, err := redissvc.ModuleVersions(ctx, rdb)
	if err != nil {
		return fmt.Errorf("list loaded modules: %w", err)
	}
	ic := plan.ImageCapabilities{Features: map[string]string{}, Hint: ml.ModulesHint("kubernetes")}
	for _, feat := range p.cat.Allowed(svc) {
		if _, ok := ml.FeatureVersion(loaded, feat); ok {
			f.SelfLoaded = append(f.SelfLoaded, feat)
			continue
		}
		mod := img.Modules[feat]
		if mod == "" {
			continue
		}
		if err := rdb.Do(ctx, "MODULE", "LOAD", mod).Err(); err != nil {
			if ic.Unusable == nil {
				ic.Unusable = map[string]string{}
			}
			ic.Unusable[feat] = p.moduleLoadError(ctx, name, mod, err)
		}
	}
	if loaded, err = redissvc.ModuleVersions(ctx, rdb); err != nil {
		return fmt.Errorf("list loaded modules: %w", err)
	}
	for _, feat := range p.cat.Allowed(svc) {
		if v, ok := ml.FeatureVersion(loaded, feat); ok {
			ic.Features[feat] = v
			delete(ic.Unusable, feat)
		}
	}
	f.ImageCapabilities = ic
	return nil
}

// moduleLoadError explains a failed MODULE LOAD with the server's log
// lines that name the module (the reply only says to read the log).
func (p *Provider) moduleLoadError(ctx context.Context, pod, mod string, err error) string {
	deadline := time.Now().Add(3 * time.Second)
	for {
		var lines []string
		for _, line := range strings.Split(p.logTail(ctx, pod, "inspect", 20), "\n") {
			if strings.Contains(line, mod) {
				if i := strings.Index(line, "# "); i >= 0 {
					line = line[i+2:]
				}
				lines = append(lines, strings.TrimSpace(line))
			}
		}
		if len(lines) > 0 {
			return strings.Join(lines, "; ")
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Sprintf("module %s does not load: %v", mod, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
