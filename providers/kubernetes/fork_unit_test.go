package kubernetes

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/redact"
	"github.com/sandboxer/sandboxer/services"
	"github.com/sandboxer/sandboxer/state"
)

// A fork is refused before anything is made: a service with no
// services.Forker (MySQL) is ErrNotForkable, a source whose pod is gone,
// is another instance's or does not run is ErrNotFound; none of these
// creates an object.
func TestForkRefusals(t *testing.T) {
	cs := fake.NewClientset()
	p := fakeProvider(t, cs)
	ctx := context.Background()
	lineage := "6f1c2b9e-0c1d-4c8e-9a3b-6c1f0e2d3a4b"
	name := podName(lineage, "sandbox.src", 1)
	meta := p.instanceMeta("sandbox.src", lineage, 1, name)
	running := &corev1.Pod{ObjectMeta: meta, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "postgres", Image: "img"}, {Name: "redis", Image: "img"}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "postgres", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}},
			{Name: "redis", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1}}},
		}}}
	if _, err := cs.CoreV1().Pods(p.ns).Create(ctx, running, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rec := func(addr, pod string, svcs ...string) *state.Record {
		r := &state.Record{Address: addr, Services: svcs, Credentials: map[string]state.Credentials{},
			Resources: state.Resources{Runtime: state.RuntimeKubernetes, Pod: pod, Containers: map[string]string{}}}
		for _, s := range svcs {
			r.Credentials[s] = state.Credentials{User: "app"}
			r.Resources.Containers[s] = s
		}
		return r
	}
	reqs := []apply.CreateRequest{{Address: "sandbox.src-fork-1", Lineage: lineage, Generation: 1, Features: config.FeatureSet{"postgres": {}}}}
	for _, tc := range []struct {
		what string
		src  *state.Record
		want error
	}{
		{"mysql", rec("sandbox.src", name, "postgres", "mysql"), apply.ErrNotForkable},
		{"a pod that is gone", rec("sandbox.src", "sbx-gone", "postgres"), apply.ErrNotFound},
		{"another instance's pod", rec("sandbox.other", name, "postgres"), apply.ErrNotFound},
		{"a stopped container", rec("sandbox.src", name, "postgres", "redis"), apply.ErrNotFound},
		{"no pod", rec("sandbox.src", "", "postgres"), apply.ErrNotFound},
	} {
		_, err := p.Fork(ctx, tc.src, reqs)
		if !errors.Is(err, tc.want) {
			t.Errorf("fork of %s: %v, want %v", tc.what, err, tc.want)
		}
	}
	if _, err := p.Fork(ctx, rec("sandbox.src", name, "postgres"), nil); err == nil {
		t.Error("a fork into no copies was not refused")
	}
	pods, _ := cs.CoreV1().Pods(p.ns).List(ctx, metav1.ListOptions{})
	secrets, _ := cs.CoreV1().Secrets(p.ns).List(ctx, metav1.ListOptions{})
	if len(pods.Items) != 1 || len(secrets.Items) != 0 {
		t.Errorf("a refused fork made objects: %d pods, %d secrets", len(pods.Items), len(secrets.Items))
	}
}

// A copy's objects: PostgreSQL runs the fork start script from the
// Secret (its passwords as SCRAM verifiers in the session file, never in
// the pod's spec); Redis starts from the RDB file an init container of
// its own image and user receives in an emptyDir both mount, after the
// TLS init container; no secret of the copy is in the pod's spec.
func TestForkCopyObjects(t *testing.T) {
	p := fakeProvider(t, fake.NewClientset())
	var secrets []string
	p.onSecrets = func(s ...string) { secrets = append(secrets, s...) }
	req := apply.CreateRequest{Address: `sandbox.ci["base-fork-1"]`, Lineage: "6f1c2b9e-0c1d-4c8e-9a3b-6c1f0e2d3a4b", Generation: 1,
		Features: config.FeatureSet{"postgres": {}, "redis": {}}, Publish: config.Publish{TLS: true}}
	b := &build{req: req, ns: p.ns, name: podName(req.Lineage, req.Address, req.Generation), withTLS: true,
		services: []string{"postgres", "redis"}, creds: map[string]state.Credentials{}, available: map[string][]string{}, versions: map[string]map[string]string{},
		images: map[string]config.Image{"postgres": p.cfg.Images["postgres"], "redis": p.cfg.Images["redis"]},
		facts:  map[string]imageFacts{"postgres": {UID: 999, GID: 998}, "redis": {UID: 100, GID: 101}},
		fork: &forkFrom{pod: "sbx-src", containers: map[string]string{"postgres": "postgres", "redis": "redis"},
			copies: map[string]services.ForkCopy{"postgres": {Path: "/var/lib/sandboxer/pgdata/.sbx-fork-1", Method: "copy"},
				"redis": {Path: "/data/dump.rdb", Method: "rdb"}}}}
	for _, svc := range b.services {
		app, _ := redact.NewPassword()
		admin, _ := redact.NewPassword()
		secrets = append(secrets, app.Reveal(), admin.Reveal())
		b.creds[svc] = state.Credentials{User: appUser, Password: app, AdminUser: adminUser, AdminPassword: admin, Database: "app"}
	}
	secret, pod, _, err := p.objects(b)
	if err != nil {
		t.Fatal(err)
	}
	j, _ := json.Marshal(pod)
	for _, s := range secrets {
		if strings.Contains(string(j), s) {
			t.Errorf("a secret or verifier is in the copy's pod spec: %s", j)
		}
	}
	if len(secrets) < 6 {
		t.Fatalf("only %d secrets recorded: the verifiers were not reported", len(secrets))
	}
	spec := pod.Spec
	var pg, rd corev1.Container
	for _, c := range spec.Containers {
		switch c.Name {
		case "postgres":
			pg = c
		case "redis":
			rd = c
		}
	}
	if !slices.Equal(pg.Command, []string{"/bin/sh", secretDir + "/" + keyForkStart}) || len(pg.Args) == 0 || pg.Args[0] != "docker-entrypoint.sh" {
		t.Errorf("postgres runs %v %v, want the fork start script", pg.Command, pg.Args)
	}
	script := string(secret.Data[keyForkStart])
	if !strings.Contains(script, "sandboxer-fork.filled") || !strings.Contains(string(secret.Data["pg-session-1.sql"]), "SCRAM-SHA-256$") {
		t.Errorf("the Secret's fork start script or session is not the fork's: %q", script)
	}
	if strings.Contains(string(secret.Data["pg-session-1.sql"]), b.creds["postgres"].Password.Reveal()) {
		t.Error("the session holds a clear password")
	}
	if !slices.Contains(rd.Args, "--dir") || !slices.Contains(rd.Args, forkDir) || !slices.Contains(rd.Args, "dump.rdb") {
		t.Errorf("redis args %v do not start from the fork's file", rd.Args)
	}
	if !hasMount(rd, "fork-redis", forkDir) || hasMount(pg, "fork-redis", forkDir) {
		t.Errorf("the fork volume is mounted in the wrong containers")
	}
	var inits []string
	for _, c := range spec.InitContainers {
		inits = append(inits, c.Name)
	}
	if !slices.Equal(inits, []string{tlsInitName, "fork-redis"}) {
		t.Fatalf("init containers %v, want TLS's then fork-redis", inits)
	}
	fi := spec.InitContainers[1]
	if *fi.SecurityContext.RunAsUser != 100 || fi.Image != rd.Image || !hasMount(fi, "fork-redis", forkDir) {
		t.Errorf("fork init container %+v: want redis's image, user and the fork volume", fi)
	}
	if pg.Env == nil || slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Projected != nil }) {
		t.Error("a copy starts from a template too")
	}
}

func hasMount(c corev1.Container, vol, at string) bool {
	return slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == vol && m.MountPath == at })
}

// A Create refused by an object of its name that is not sandboxer's
// (a Secret, a pod) leaves that object where it was: the cleanup after
// the failure removes only what is the instance's (it used to delete by
// name, and removed the very object it had refused to touch).
func TestFailedCreateKeepsForeignObjects(t *testing.T) {
	for _, kind := range []string{"secrets", "pods"} {
		t.Run(kind, func(t *testing.T) {
			cs := fake.NewClientset()
			p := fakeProvider(t, cs)
			p.fakeReady = true
			for _, svc := range []string{"postgres", "redis"} {
				img := p.cfg.Images[svc]
				p.rememberRef(svc+"\x00"+img.Ref, "sha256:test")
				p.caps.Put(p.capabilityKey(svc, img, "sha256:test"), imageFacts{UID: 999, GID: 999})
			}
			ctx := ctxFor(t, 10*time.Second)
			req := apply.CreateRequest{Address: "sandbox.blocked", Lineage: "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", Generation: 1, Features: bare()}
			name := podName(req.Lineage, req.Address, 1)
			meta := metav1.ObjectMeta{Name: name, Namespace: p.ns, Labels: map[string]string{"app": "theirs"}}
			var err error
			if kind == "secrets" {
				_, err = cs.CoreV1().Secrets(p.ns).Create(ctx, &corev1.Secret{ObjectMeta: meta}, metav1.CreateOptions{})
			} else {
				_, err = cs.CoreV1().Pods(p.ns).Create(ctx, &corev1.Pod{ObjectMeta: meta}, metav1.CreateOptions{})
			}
			mustf(t, err, "create the foreign object")
			_, err = p.Create(ctx, req)
			if err == nil || !strings.Contains(err.Error(), "not labelled as sandboxer's") {
				t.Fatalf("Create: %v, want refused", err)
			}
			if kind == "secrets" {
				_, err = cs.CoreV1().Secrets(p.ns).Get(ctx, name, metav1.GetOptions{})
			} else {
				_, err = cs.CoreV1().Pods(p.ns).Get(ctx, name, metav1.GetOptions{})
			}
			if err != nil {
				t.Errorf("the foreign %s is gone after the failed Create: %v", kind, err)
			}
			secrets, _ := cs.CoreV1().Secrets(p.ns).List(ctx, metav1.ListOptions{})
			if kind == "pods" && len(secrets.Items) != 0 {
				t.Errorf("the failed Create left its Secret")
			}
		})
	}
}
