package kubernetes

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
	"github.com/sandboxer/sandboxer/services"
)

// An inspection is a short-lived pod of the image that runs `sleep`
// (nothing of the image's own runs) with every capability dropped, as the
// image's default user; sandboxer reads what it needs over the exec API:
// the service user's uid and gid (`id`), the image's environment, and for
// a services.FileInspector (PostgreSQL, MySQL) the files its features are
// read from (`tar -cf -`). Redis modules are
// found by loading them in a second pod that runs the server as a sandbox
// would (moduleFeatures). The pods are labelled LabelInspect, never
// managed, and bounded by activeDeadlineSeconds, so one a killed run left
// dies by itself; the next Check deletes it.
const (
	inspectSleep    = 300 // seconds: longer than any inspection takes
	staleInspection = 10 * time.Minute
)

// inspect finds the facts of img for service and the image ID its pod ran.
func (p *Provider) inspect(ctx context.Context, service string, img config.Image) (imageFacts, string, error) {
	p.removeStaleInspections(ctx)
	name := "sbx-inspect-" + dnsSanitize(service) + "-" + randomSuffix()
	pod := p.inspectionPod(name, img.Ref, []string{"sleep", strconv.Itoa(inspectSleep)}, nil)
	running, err := p.runInspection(ctx, pod, nil)
	defer p.deleteInspection(ctx, name)
	asNobody := false
	if isPodSecurityDenial(err) {
		// The namespace enforces the restricted Pod Security standard,
		// which refuses a pod that may run as root, as the image's
		// default user may be: inspect as nobody instead. The image's own
		// USER is then unknown, so the service runs as its account.
		asNobody = true
		pod = p.inspectionPod(name, img.Ref, []string{"sleep", strconv.Itoa(inspectSleep)}, nobodySecurity())
		running, err = p.runInspection(ctx, pod, nil)
	}
	if err != nil {
		return imageFacts{}, "", err
	}
	imageID := imageIDOf(running, "inspect")
	if imageID == "" {
		return imageFacts{}, "", fmt.Errorf("the kubelet reported no image ID for image %s", img.Ref)
	}
	r := podRunner{p: p, pod: name, container: "inspect"}
	var f imageFacts
	err = retryCut(ctx, "read the service user of image "+img.Ref, name, func() (err error) {
		f, err = readAccount(ctx, r, service, asNobody)
		return err
	})
	if err != nil {
		return imageFacts{}, "", fmt.Errorf("image %s: %w", img.Ref, err)
	}
	// How an image's features are found is the service's to say: in its
	// files (PostgreSQL, MySQL) or by loading modules (Redis, Valkey).
	s, _ := services.Lookup(service)
	fi, files := s.(services.FileInspector)
	ml, modules := s.(services.ModuleLoader)
	switch {
	case files:
		allowed := p.cat.Allowed(service)
		var versions map[string]string
		err := retryCut(ctx, "read the features of image "+img.Ref, name, func() (err error) {
			versions, err = fi.ImageFeatures(ctx, podFiles{r: r}, f.env, allowed)
			return err
		})
		if err != nil {
			return imageFacts{}, "", fmt.Errorf("image %s: %w", img.Ref, err)
		}
		f.ImageCapabilities = plan.ImageCapabilities{Features: map[string]string{}, Hint: fi.FeaturesHint("kubernetes")}
		for _, e := range allowed {
			if v, ok := versions[e]; ok {
				f.Features[e] = v
			}
		}
	case modules:
		if err := p.moduleFeatures(ctx, s, ml, img, &f); err != nil {
			return imageFacts{}, "", fmt.Errorf("image %s: %w", img.Ref, err)
		}
	default:
		return imageFacts{}, "", fmt.Errorf("service %s is not supported by the kubernetes provider", service)
	}
	return f, imageID, nil
}

// inspectionPod is a throwaway pod: no service account token, no service
// links, every capability dropped, a deadline.
func (p *Provider) inspectionPod(name, ref string, cmd []string, sec *corev1.SecurityContext) *corev1.Pod {
	if sec == nil {
		sec = &corev1.SecurityContext{
			Privileged:               ptr.To(false),
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: p.ns, Labels: map[string]string{LabelInspect: "true"}},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			AutomountServiceAccountToken:  ptr.To(false),
			EnableServiceLinks:            ptr.To(false),
			TerminationGracePeriodSeconds: ptr.To[int64](0),
			ActiveDeadlineSeconds:         ptr.To[int64](inspectSleep),
			SecurityContext:               &corev1.PodSecurityContext{SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
			Containers: []corev1.Container{{
				Name: "inspect", Image: ref, ImagePullPolicy: corev1.PullIfNotPresent,
				Command: cmd, SecurityContext: sec, Resources: p.resources(),
			}},
		},
	}
}

// runInspection creates pod (and secret first, when given) and waits until
// its container runs.
func (p *Provider) runInspection(ctx context.Context, pod *corev1.Pod, secret *corev1.Secret) (*corev1.Pod, error) {
	if secret != nil {
		if _, err := p.cs.CoreV1().Secrets(p.ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
			return nil, p.apiErr("create", "secrets", secret.Name, err)
		}
	}
	created, err := p.cs.CoreV1().Pods(p.ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		return nil, p.apiErr("create", "pods", pod.Name, err)
	}
	wctx, cancel := context.WithTimeout(ctx, p.readyTimeout())
	defer cancel()
	var last *corev1.Pod
	err = p.watchPod(wctx, pod.Name, created.ResourceVersion, func(cur *corev1.Pod) (bool, error) {
		last = cur
		if err := podFailure(cur); err != nil {
			return false, err
		}
		return containerRunning(cur, "inspect") && cur.Status.PodIP != "", nil
	})
	if err != nil {
		if ctx.Err() == nil && wctx.Err() != nil {
			return nil, fmt.Errorf("a pod of image %s did not start within %s: %s", pod.Spec.Containers[0].Image, p.readyTimeout(), pendingReason(last))
		}
		return nil, fmt.Errorf("a pod of image %s: %w", pod.Spec.Containers[0].Image, err)
	}
	return last, nil
}

// deleteInspection removes an inspection pod and its Secret, on a fresh
// context so an interrupted Check still cleans up.
func (p *Provider) deleteInspection(ctx context.Context, name string) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	_ = p.cs.CoreV1().Pods(p.ns).Delete(cctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	_ = p.cs.CoreV1().Secrets(p.ns).Delete(cctx, name, metav1.DeleteOptions{})
}

// removeStaleInspections deletes inspection pods and Secrets older than
// any inspection takes (left by a killed run). Best effort.
func (p *Provider) removeStaleInspections(ctx context.Context) {
	sel := labels.SelectorFromSet(labels.Set{LabelInspect: "true"}).String()
	now := time.Now()
	if pods, err := p.cs.CoreV1().Pods(p.ns).List(ctx, metav1.ListOptions{LabelSelector: sel}); err == nil {
		for _, pod := range pods.Items {
			if now.Sub(pod.CreationTimestamp.Time) > staleInspection {
				_ = p.cs.CoreV1().Pods(p.ns).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
			}
		}
	}
	if secs, err := p.cs.CoreV1().Secrets(p.ns).List(ctx, metav1.ListOptions{LabelSelector: sel}); err == nil {
		for _, s := range secs.Items {
			if now.Sub(s.CreationTimestamp.Time) > staleInspection {
				_ = p.cs.CoreV1().Secrets(p.ns).Delete(ctx, s.Name, metav1.DeleteOptions{})
			}
		}
	}
}

// accountScript prints the image user's uid and gid, the service
// account's (or "-"), then the environment.
const accountScript = `id -u; id -g; id -u "$1" 2>/dev/null || echo -; id -g "$1" 2>/dev/null || echo -; env`

// readAccount finds the user the service runs as: the image's own USER
// when that is not root, else the service's account in the image (the
// one its entrypoint would switch to). An image with neither cannot run
// without root, which a sandbox never gets.
func readAccount(ctx context.Context, r podRunner, service string, asNobody bool) (imageFacts, error) {
	account := service
	if s, ok := services.Lookup(service); ok {
		account = s.Account()
	}
	var out bytes.Buffer
	if err := r.execStdin(ctx, []string{"sh", "-c", accountScript, "sh", account}, nil, &out); err != nil {
		return imageFacts{}, fmt.Errorf("read the service user: %w", err)
	}
	return parseAccount(out.String(), account, asNobody)
}

// nobodyUID is the user an inspection runs as where the namespace
// refuses pods that may run as root.
const nobodyUID = 65534

// nobodySecurity is the restricted Pod Security standard's container.
func nobodySecurity() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		Privileged:               ptr.To(false),
		AllowPrivilegeEscalation: ptr.To(false),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		RunAsUser:                ptr.To[int64](nobodyUID),
		RunAsGroup:               ptr.To[int64](nobodyUID),
		RunAsNonRoot:             ptr.To(true),
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// parseAccount reads accountScript's output. asNobody: the script ran as
// nobody, not as the image's user, so only the account counts.
func parseAccount(out, account string, asNobody bool) (imageFacts, error) {
	sc := bufio.NewScanner(strings.NewReader(out))
	var head []string
	f := imageFacts{Env: map[string]string{}}
	for sc.Scan() {
		line := sc.Text()
		if len(head) < 4 {
			head = append(head, strings.TrimSpace(line))
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		if ok && slices.Contains(keptEnv, k) {
			f.Env[k] = v
		}
	}
	if len(head) < 4 {
		return imageFacts{}, fmt.Errorf("unexpected output of id: %q", out)
	}
	num := func(s string) (int64, bool) {
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err == nil
	}
	uid, ok1 := num(head[0])
	gid, ok2 := num(head[1])
	if !ok1 || !ok2 {
		return imageFacts{}, fmt.Errorf("unexpected output of id: %q", out)
	}
	if uid != 0 && !asNobody {
		f.UID, f.GID = uid, gid
		return f, nil
	}
	auid, ok1 := num(head[2])
	agid, ok2 := num(head[3])
	if !ok1 || !ok2 || auid == 0 {
		return imageFacts{}, fmt.Errorf("the image runs as root and has no %q account to run the service as; "+
			"sandboxer never runs a sandbox as root (use an image with a USER or a %s account)", account, account)
	}
	f.UID, f.GID = auid, agid
	return f, nil
}

// podFiles reads an image's files from an inspection pod
// (services/postgres.ImageFiles): a tar of path, streamed, the link itself
// when path is a symbolic link (as docker cp does). The script prints one
// byte before the tar so that a path the image lacks is told apart
// (exit 3) before Read returns.
type podFiles struct{ r podRunner }

const readScript = `[ -e "$1" ] || [ -L "$1" ] || exit 3; cd "$(dirname "$1")" && printf Y && exec tar -cf - "$(basename "$1")"`

func (f podFiles) Read(ctx context.Context, path string) (io.ReadCloser, error) {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := f.r.execStdin(ctx, []string{"sh", "-c", readScript, "sh", path}, nil, pw)
		pw.CloseWithError(err)
		done <- err
	}()
	var first [1]byte
	if _, err := io.ReadFull(pr, first[:]); err != nil || first[0] != 'Y' {
		pr.Close()
		xerr := <-done
		if xerr != nil && strings.Contains(xerr.Error(), "exited with code 3") {
			return nil, fmt.Errorf("%s: %w", path, fs.ErrNotExist)
		}
		if xerr == nil {
			xerr = errors.New("no output")
		}
		return nil, fmt.Errorf("read %s: %w", path, xerr)
	}
	return &execReader{pr: pr, done: done}, nil
}

// execReader is the rest of an exec's output. Close reads what the
// caller left (a tar's trailer) to the end, so the exec ends as it would
// have anyway, not with a write into a closed pipe.
type execReader struct {
	pr   *io.PipeReader
	done chan error
}

func (r *execReader) Read(b []byte) (int, error) { return r.pr.Read(b) }

func (r *execReader) Close() error {
	_, _ = io.Copy(io.Discard, r.pr)
	err := <-r.done
	r.pr.Close()
	return err
}

func randomSuffix() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
