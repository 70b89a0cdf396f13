package kubernetes

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/sandboxer/sandboxer/internal/redact"
	"github.com/sandboxer/sandboxer/internal/scram"
	"github.com/sandboxer/sandboxer/providers/internal/kit"
	"github.com/sandboxer/sandboxer/services"
	pgsvc "github.com/sandboxer/sandboxer/services/postgres"
	"github.com/sandboxer/sandboxer/state"
)

// PostgreSQL template data directories on Kubernetes (issue 31;
// services/postgres template.go says what a template is and holds).
//
// A template is a gzip'd tar of an initialised data directory, cut into
// parts of templatePartSize, each an immutable ConfigMap, plus a manifest
// ConfigMap named after the template's key (templateName) that lists the
// build, the number of parts and their SHA-256. The manifest is written
// last: a template without one does not exist. A sandbox's pod mounts
// the parts through one projected volume (the kubelet reads them; the
// runtime sends nothing per sandbox) and its PostgreSQL container runs
// pgsvc.TemplateArchiveStartScript, which checks the checksum, unpacks
// the archive into the pod's data directory (an emptyDir, in memory with
// storage = "tmpfs"), sets the sandbox's passwords in single-user mode
// and then runs the image's entrypoint, which finds an initialised
// directory and starts the server. Nothing listens until every password
// is the sandbox's; the template holds none that works.
//
// Why ConfigMaps: they work in any namespace under the restricted Pod
// Security standard (no hostPath, no privileged copy), need no storage
// class, and are read by the kubelet, not streamed by sandboxer per pod.
// A template of the local images is about 4-5 MiB compressed: a few
// parts.
//
// A template is built once per key by a throwaway pod of the very image
// (by the image ID the kubelet reported): its "build" container runs the
// image's entrypoint with the template's init files (the app role,
// database and extensions, no password) and stops the server cleanly; a
// "keep" container of the same image holds the data directory's emptyDir
// until sandboxer has read it over the exec API. Concurrent first uses,
// in any number of processes, make one template: the builder holds a lock
// ConfigMap (templateLockName) created with create-if-absent semantics;
// the others wait for the manifest. A lock older than templateLockStale
// is a dead builder's and is taken over.
//
// A template the start script finds damaged (parts missing or altered)
// makes the container exit with pgsvc.TemplateDamaged: Create removes the
// manifest, rebuilds once and creates the sandbox again; a damaged
// template is never started.
//
// The key hashes everything that shapes the data directory: the format
// below, the image ID, the service user, the entrypoint's environment,
// the server's arguments and the init script. A new key is a new
// template; the old one is never reused. Templates of keys no
// configuration uses any more stay until removed by label
// (LabelTemplate); they cost a few MiB of etcd each.
const (
	// LabelTemplate marks a template's ConfigMaps (value "postgres"), its
	// lock ("lock") and its builder pod and Secret ("build").
	LabelTemplate      = "sandboxer.dev/template"
	labelTemplateKey   = "sandboxer.dev/template-key"
	labelTemplateBuild = "sandboxer.dev/template-build"

	templateFormat       = "k8s-pgtpl-1"
	templatePartSize     = 768 << 10 // below a ConfigMap's 1 MiB
	templateBuildTimeout = 5 * time.Minute
	templateLockStale    = 2 * templateBuildTimeout
	templateLockPoll     = 250 * time.Millisecond

	keyTemplateStart   = "pg-from-template.sh"
	keyTemplateSession = "pg-session-1.sql"
	templateVolume     = "pgtemplate"
	buildPasswordKey   = "pgpassword"
)

// pgTemplate is one complete template, as its manifest says.
type pgTemplate struct {
	Service         string // whose data directory: PostgreSQL's
	Key, Build, Sum string
	Parts           int
	uid             string // the manifest's UID, for a delete's precondition
}

// usable reports a complete template that is not the build bad.
func (t *pgTemplate) usable(bad string) bool { return t != nil && t.Parts > 0 && t.Build != bad }

// pgTemplates remembers the manifests this process found or built, so a
// sandbox of a known template costs no API request.
type pgTemplates struct {
	mu    sync.Mutex
	known map[string]*pgTemplate
}

func (t *pgTemplates) get(key string) *pgTemplate {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.known[key]
}

func (t *pgTemplates) put(tpl *pgTemplate) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.known == nil {
		t.known = map[string]*pgTemplate{}
	}
	t.known[tpl.Key] = tpl
}

func (t *pgTemplates) forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.known, key)
}

// pgTemplateInput is what shapes one template: a build makes it from
// these, and its key hashes them.
type pgTemplateInput struct {
	ref   string
	facts imageFacts
	env   []corev1.EnvVar
	args  []string // the server's command line without TLS: "postgres", -c …
	init  []byte
	admin string
	key   string
}

func templateName(key string) string     { return "sbx-pgtpl-" + key[:20] }
func templateLockName(key string) string { return templateName(key) + "-lock" }
func templatePartName(key, build string, i int) string {
	return templateName(key) + "-" + build + "-" + strconv.Itoa(i)
}

// templateKey hashes what shapes a template.
func templateKey(imageID string, f imageFacts, env []corev1.EnvVar, args []string, init []byte) string {
	pairs := make([]string, 0, len(env))
	for _, e := range env {
		pairs = append(pairs, e.Name+"="+e.Value)
	}
	slices.Sort(pairs)
	return kit.HashParts([]string{templateFormat, imageID, fmt.Sprintf("%d:%d", f.UID, f.GID)}, pairs, args, []string{string(init)})[:40]
}

// pgTemplateFor finds or builds the template of b's PostgreSQL, unless
// templates are off (template = false, fake nodes whose pods never run, an
// image whose server runs as root, a clientset that cannot exec). bad is a build found damaged, never
// to be used again.
func (p *Provider) pgTemplateFor(ctx context.Context, b *build, bad string) error {
	b.tpl = nil
	if _, ok := b.facts[pgsvc.Name]; !ok || p.cfg.NoTemplate || p.fakeReady || p.rest == nil {
		return nil
	}
	in, ok := p.pgTemplateInput(b)
	if !ok {
		return nil
	}
	t, err := p.ensureTemplate(ctx, in, bad)
	if err != nil {
		return fmt.Errorf("template data directory of %s: %w", in.ref, err)
	}
	b.tpl = t
	return nil
}

// pgTemplateInput is the template input of b's PostgreSQL; false when the
// image's ID is unknown to this process or its server runs as root.
func (p *Provider) pgTemplateInput(b *build) (pgTemplateInput, bool) {
	f, img := b.facts[pgsvc.Name], b.images[pgsvc.Name]
	p.caps.mu.Lock()
	id := p.caps.refs[pgsvc.Name+"\x00"+img.Ref]
	p.caps.mu.Unlock()
	if id == "" || f.UID == 0 {
		return pgTemplateInput{}, false
	}
	c, feats := b.creds[pgsvc.Name], b.req.Features[pgsvc.Name]
	st, err := pgStart(c, feats, p.cat.Allowed(pgsvc.Name), f)
	if err != nil {
		return pgTemplateInput{}, false
	}
	env := envVars(st.Env)
	init := pgsvc.TemplateInitScript(c, feats, p.cat.Allowed(pgsvc.Name))
	return pgTemplateInput{ref: img.Ref, facts: f, env: env, args: st.Args, init: init, admin: c.AdminUser,
		key: templateKey(p.templateSalt+id, f, env, st.Args, init)}, true
}

// pgStart is PostgreSQL's start without TLS: what a template is made
// with.
func pgStart(c state.Credentials, feats, allowed []string, f imageFacts) (services.Start, error) {
	return pgsvc.Service{}.Start(services.StartInput{Creds: c, Features: feats, Allowed: allowed, ImageEnv: f.env},
		services.Placement{SecretDir: secretDir, DataRoot: dataRoot})
}

// ensureTemplate returns the template of in.key, building it when there is
// none (or only bad). Concurrent calls of one process share one answer.
func (p *Provider) ensureTemplate(ctx context.Context, in pgTemplateInput, bad string) (*pgTemplate, error) {
	if t := p.pgtpl.get(in.key); t.usable(bad) {
		return t, nil
	}
	ch := p.tplBuilds.DoChan(in.key+"/"+bad, func() (any, error) {
		// Not the caller's context: another caller may still want it.
		return p.ensureTemplateNow(context.WithoutCancel(ctx), in, bad)
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			return nil, r.Err
		}
		t := r.Val.(*pgTemplate)
		p.pgtpl.put(t)
		return t, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (p *Provider) ensureTemplateNow(ctx context.Context, in pgTemplateInput, bad string) (*pgTemplate, error) {
	ctx, cancel := context.WithTimeout(ctx, templateLockStale+templateBuildTimeout)
	defer cancel()
	cms := p.cs.CoreV1().ConfigMaps(p.ns)
	for {
		t, err := p.findTemplate(ctx, in.key)
		if err != nil {
			return nil, err
		}
		if t.usable(bad) {
			return t, nil
		}
		lock := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name:   templateLockName(in.key),
			Labels: map[string]string{LabelTemplate: "lock", labelTemplateKey: in.key},
		}}
		made, err := cms.Create(ctx, lock, metav1.CreateOptions{})
		if err == nil {
			defer p.deleteConfigMap(ctx, made.Name, string(made.UID))
			// Between the look and the lock another builder may have
			// finished.
			if t, err = p.findTemplate(ctx, in.key); err != nil {
				return nil, err
			}
			if t.usable(bad) {
				return t, nil
			}
			if t != nil {
				p.removeTemplate(ctx, t)
			}
			return p.buildTemplate(ctx, in)
		}
		if !isAlreadyExists(err) {
			return nil, p.apiErr("create", "configmaps", lock.Name, err)
		}
		held, err := cms.Get(ctx, lock.Name, metav1.GetOptions{})
		switch {
		case isNotFound(err):
			continue
		case err != nil:
			return nil, p.apiErr("get", "configmaps", lock.Name, err)
		case time.Since(held.CreationTimestamp.Time) > templateLockStale:
			// A dead builder's: take it over.
			p.deleteConfigMap(ctx, held.Name, string(held.UID))
			continue
		}
		select {
		case <-time.After(templateLockPoll):
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for another process's template build: %w", ctx.Err())
		}
	}
}

// findTemplate reads the manifest of key; nil when there is none.
func (p *Provider) findTemplate(ctx context.Context, key string) (*pgTemplate, error) {
	cm, err := p.cs.CoreV1().ConfigMaps(p.ns).Get(ctx, templateName(key), metav1.GetOptions{})
	if isNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, p.apiErr("get", "configmaps", templateName(key), err)
	}
	n, err := strconv.Atoi(cm.Data["parts"])
	if cm.Data["key"] != key || err != nil || n < 1 || cm.Data["sha256"] == "" || cm.Data["build"] == "" {
		// Not a manifest of this key (a collision of the name's prefix,
		// or damaged): not usable, replaced.
		return &pgTemplate{Service: pgsvc.Name, Key: key, Build: "bad:" + string(cm.UID), uid: string(cm.UID)}, nil
	}
	return &pgTemplate{Service: pgsvc.Name, Key: key, Build: cm.Data["build"], Sum: cm.Data["sha256"], Parts: n, uid: string(cm.UID)}, nil
}

// removeTemplate deletes a template's manifest (only that one: its UID)
// and its parts.
func (p *Provider) removeTemplate(ctx context.Context, t *pgTemplate) {
	p.deleteConfigMap(ctx, templateName(t.Key), t.uid)
	sel := labels.SelectorFromSet(labels.Set{LabelTemplate: pgsvc.Name, labelTemplateKey: t.Key, labelTemplateBuild: t.Build}).String()
	parts, err := p.cs.CoreV1().ConfigMaps(p.ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return
	}
	for _, cm := range parts.Items {
		p.deleteConfigMap(ctx, cm.Name, string(cm.UID))
	}
}

func (p *Provider) deleteConfigMap(ctx context.Context, name, uid string) {
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	opts := metav1.DeleteOptions{}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: ptr.To(types.UID(uid))}
	}
	_ = p.cs.CoreV1().ConfigMaps(p.ns).Delete(dctx, name, opts)
}

// buildTemplate runs the builder pod, reads the data directory as a
// gzip'd tar, and writes the parts, then the manifest.
func (p *Provider) buildTemplate(ctx context.Context, in pgTemplateInput) (*pgTemplate, error) {
	ctx, cancel := context.WithTimeout(ctx, templateBuildTimeout)
	defer cancel()
	build := randomSuffix()
	name := "sbx-pgtpl-build-" + build
	throwaway, err := redact.NewPassword()
	if err != nil {
		return nil, err
	}
	var scrub redact.Scrubber
	scrub.Add(throwaway)
	meta := metav1.ObjectMeta{Name: name, Namespace: p.ns,
		Labels: map[string]string{LabelInspect: "true", LabelTemplate: "build", labelTemplateKey: in.key}}
	secret := secretSpec(meta, map[string][]byte{
		buildPasswordKey:         []byte(throwaway.Reveal()),
		pgsvc.TemplateInitName:   in.init,
		pgsvc.TemplateRevokeName: pgsvc.TemplateRevokeSQL(in.admin),
		pgsvc.TemplateFinishName: pgsvc.TemplateFinishScript(in.key),
	})
	pod := p.templateBuilderPod(meta, in)
	defer p.deleteInspection(ctx, name)
	if _, err := p.cs.CoreV1().Secrets(p.ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		return nil, p.apiErr("create", "secrets", name, err)
	}
	made, err := p.cs.CoreV1().Pods(p.ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, p.apiErr("create", "pods", name, err)
	}
	err = p.watchPod(ctx, name, made.ResourceVersion, func(cur *corev1.Pod) (bool, error) {
		if cur == nil {
			return false, errPodGone
		}
		for _, cs := range cur.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && fatalWaiting[w.Reason] {
				return false, fmt.Errorf("container %s cannot start: %s: %s", cs.Name, w.Reason, strings.TrimSpace(w.Message))
			}
			if t := cs.State.Terminated; t != nil {
				if cs.Name == "build" && t.ExitCode == 0 {
					return true, nil
				}
				return false, fmt.Errorf("container %s exited with code %d (%s)\n--- last lines of its log ---\n%s",
					cs.Name, t.ExitCode, t.Reason, scrub.Text(strings.TrimSpace(t.Message)))
			}
		}
		return false, nil
	})
	if err != nil {
		return nil, fmt.Errorf("build a template in pod %s: %w", name, err)
	}
	var archive bytes.Buffer
	r := podRunner{p: p, pod: name, container: "keep"}
	if err := r.Exec(ctx, "", []string{"tar", "-czf", "-", "-C", pgDataDir(), "."}, &archive); err != nil {
		return nil, fmt.Errorf("read the template's data directory: %w", err)
	}
	sum := sha256.Sum256(archive.Bytes())
	t := &pgTemplate{Service: pgsvc.Name, Key: in.key, Build: build, Sum: hex.EncodeToString(sum[:])}
	data := archive.Bytes()
	cms := p.cs.CoreV1().ConfigMaps(p.ns)
	partLabels := map[string]string{LabelTemplate: pgsvc.Name, labelTemplateKey: in.key, labelTemplateBuild: build}
	for i := 0; len(data) > 0; i++ {
		n := min(len(data), templatePartSize)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: templatePartName(in.key, build, i), Labels: partLabels},
			BinaryData: map[string][]byte{"part": data[:n]}, Immutable: ptr.To(true)}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			p.removeTemplate(ctx, t)
			return nil, p.apiErr("create", "configmaps", cm.Name, err)
		}
		data = data[n:]
		t.Parts = i + 1
	}
	manifest := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: templateName(in.key),
		Labels: map[string]string{LabelTemplate: pgsvc.Name, labelTemplateKey: in.key, labelTemplateBuild: build}},
		Data: map[string]string{"key": in.key, "build": build, "parts": strconv.Itoa(t.Parts), "sha256": t.Sum,
			"image": in.ref, "bytes": strconv.Itoa(archive.Len())}}
	got, err := cms.Create(ctx, manifest, metav1.CreateOptions{})
	if err != nil {
		p.removeTemplate(ctx, t)
		return nil, p.apiErr("create", "configmaps", manifest.Name, err)
	}
	t.uid = string(got.UID)
	return t, nil
}

// templateBuilderPod runs the image's entrypoint on an empty data
// directory with the template's init files ("build"), beside a container
// of the same image that keeps the directory readable after the build
// stops ("keep").
func (p *Provider) templateBuilderPod(meta metav1.ObjectMeta, in pgTemplateInput) *corev1.Pod {
	env := make([]corev1.EnvVar, 0, len(in.env))
	for _, e := range in.env {
		if e.Name == "POSTGRES_PASSWORD_FILE" {
			e.Value = path.Join(secretDir, buildPasswordKey)
		}
		env = append(env, e)
	}
	mounts := []corev1.VolumeMount{
		{Name: "files", MountPath: secretDir, ReadOnly: true},
		{Name: "pgdata", MountPath: dataRoot},
	}
	for _, f := range []string{pgsvc.TemplateInitName, pgsvc.TemplateRevokeName, pgsvc.TemplateFinishName} {
		mounts = append(mounts, corev1.VolumeMount{Name: "files", MountPath: path.Join(pgsvc.InitDir, f), SubPath: f, ReadOnly: true})
	}
	sec := containerSecurity(in.facts)
	return &corev1.Pod{
		ObjectMeta: meta,
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			ActiveDeadlineSeconds:         ptr.To(int64(templateBuildTimeout / time.Second)),
			SecurityContext: &corev1.PodSecurityContext{
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
				FSGroup:        ptr.To(in.facts.GID),
			},
			Volumes: []corev1.Volume{
				{Name: "files", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: meta.Name, DefaultMode: ptr.To[int32](0o440)}}},
				{Name: "pgdata", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
			Containers: []corev1.Container{
				{Name: "build", Image: in.ref, ImagePullPolicy: corev1.PullIfNotPresent, Args: in.args, Env: env,
					SecurityContext: sec, Resources: p.resources(), VolumeMounts: mounts,
					TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError},
				{Name: "keep", Image: in.ref, ImagePullPolicy: corev1.PullIfNotPresent,
					Command:         []string{"sleep", strconv.Itoa(int(templateBuildTimeout / time.Second))},
					SecurityContext: sec, Resources: p.resources(),
					VolumeMounts: []corev1.VolumeMount{{Name: "pgdata", MountPath: dataRoot}}},
			},
		},
	}
}

// fromTemplate turns PostgreSQL's run into a start from template t: the
// start script (with the session that sets both passwords, verifiers
// only) goes into the Secret, the parts into a projected volume, and the
// container runs the script with the image's entrypoint and command as
// its arguments. The official images' entrypoint is docker-entrypoint.sh
// on the PATH; a pod spec cannot read an image's ENTRYPOINT.
func (p *Provider) fromTemplate(b *build, run *serviceRun, data map[string][]byte, c state.Credentials) error {
	t := b.tpl
	adminVerifier, err := scram.Verifier(c.AdminPassword.Reveal())
	if err != nil {
		return err
	}
	appVerifier, err := scram.Verifier(c.Password.Reveal())
	if err != nil {
		return err
	}
	b.scrub.Add(state.Secret(adminVerifier), state.Secret(appVerifier))
	if p.onSecrets != nil {
		p.onSecrets(adminVerifier, appVerifier)
	}
	sessions := pgsvc.TemplateSessions(c, adminVerifier, appVerifier)
	files := []string{path.Join(secretDir, keyTemplateSession)}
	data[keyTemplateSession] = sessions[0].SQL
	data[keyTemplateStart] = pgsvc.TemplateArchiveStartScript(t.Key, t.Sum, sessions, files, pgsvc.SingleUserArgs(run.Args))
	run.Command = []string{"/bin/sh", path.Join(secretDir, keyTemplateStart)}
	run.Args = append([]string{"docker-entrypoint.sh"}, run.Args...)
	run.Keys = append(run.Keys, keyTemplateStart, keyTemplateSession)
	slices.Sort(run.Keys)
	proj := &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o444)}
	for i := range t.Parts {
		proj.Sources = append(proj.Sources, corev1.VolumeProjection{ConfigMap: &corev1.ConfigMapProjection{
			LocalObjectReference: corev1.LocalObjectReference{Name: templatePartName(t.Key, t.Build, i)},
			Items:                []corev1.KeyToPath{{Key: "part", Path: pgsvc.TemplateArchivePart(i)}},
			// A part removed by hand must not hold the pod in
			// ContainerCreating: the start script finds it missing.
			Optional: ptr.To(true),
		}})
	}
	run.Projected = proj
	return nil
}

// pgDataDir is PostgreSQL's data directory in its pod (pgsvc.Service's
// Start puts it under the data root).
func pgDataDir() string { return path.Join(dataRoot, "pgdata") }

// templateDamaged reports whether the pod's container of service ended
// because its template could not be used.
func (p *Provider) templateDamaged(ctx context.Context, name, service string) bool {
	pod, err := p.cs.CoreV1().Pods(p.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if t := cs.State.Terminated; cs.Name == service && t != nil && t.ExitCode == pgsvc.TemplateDamaged {
			return true
		}
	}
	return false
}
