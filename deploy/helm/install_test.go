package helm

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8s "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/internal/testenv"
)

// The chart on the real cluster (the one make kube starts): helm install
// in a namespace of the test's own, with a PostgreSQL state backend in a
// pod beside it, sandboxes in the same namespace; both replicas become
// Ready and the first request is served within 60 s of the install; a
// sandbox requested from one replica is a cache hit on the other, and
// its database answers at the in-cluster address handed out; after its
// release and helm uninstall, nothing labelled is left. The test reaches
// the replicas at their pod IPs (the cluster has no kube-proxy; the
// chart's Service is for clients in the cluster) and tells serve where
// the apiserver is for the same reason.
func TestChartInstallsOnTheCluster(t *testing.T) {
	bin := helmBinary(t)
	kubeconfig := testenv.Kubeconfig(t)
	image := "sandboxer.local/sandboxer:" + testenv.SourceVersion(t)
	if err := exec.Command("docker", "image", "inspect", image).Run(); err != nil {
		t.Fatalf("%s is not built (make image): %v", image, err)
	}
	ctx := context.Background()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := k8s.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	apiserver, err := url.Parse(cfg.Host)
	if err != nil {
		t.Fatal(err)
	}
	// The cluster's containerd has the image only if it was imported
	// after make image: import what changed (a no-op when it is there).
	if out, err := exec.Command("bash", filepath.Join("..", "..", "scripts", "kube", "images.sh"), "project").CombinedOutput(); err != nil {
		t.Fatalf("import the images into the cluster: %v\n%s", err, out)
	}

	ns := "sbx-helm-" + randomHex(t, 4)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns,
		Labels: map[string]string{"sandboxer.dev/test": "true"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	kubeHelm := func(args ...string) (string, error) {
		cmd := exec.Command(bin, append(args, "--namespace", ns, "--kubeconfig", kubeconfig)...)
		home := t.TempDir()
		cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
			"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		return out.String(), err
	}

	// The state backend: PostgreSQL in a pod, behind a headless Service.
	pgPassword := randomHex(t, 16)
	token := randomHex(t, 32)
	secret := func(name string, data map[string]string) {
		t.Helper()
		if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name},
			StringData: data}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	secret("state-pg", map[string]string{"password": pgPassword})
	pgLabels := map[string]string{"app": "state-pg"}
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "state-pg", Labels: pgLabels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "postgres", Image: "sandboxer.local/postgres:17", ImagePullPolicy: corev1.PullNever,
			Env: []corev1.EnvVar{{Name: "POSTGRES_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "state-pg"}, Key: "password"}}}},
			Ports: []corev1.ContainerPort{{ContainerPort: 5432}},
			ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{
				Command: []string{"pg_isready", "-h", "127.0.0.1", "-U", "postgres"}}}, PeriodSeconds: 1},
		}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "state-pg"},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: pgLabels,
			Ports: []corev1.ServicePort{{Port: 5432, TargetPort: intstr.FromInt32(5432)}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 3*time.Minute, "the state backend's pod ready", func() bool {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, "state-pg", metav1.GetOptions{})
		return err == nil && podReady(p)
	})
	backendURL := fmt.Sprintf("postgres://postgres:%s@state-pg.%s.svc.cluster.local:5432/postgres?sslmode=disable", pgPassword, ns)
	secret(release+"-sandboxer-api-token", map[string]string{"token": token})
	secret(release+"-sandboxer-state", map[string]string{"backend-url": backendURL, "state-key": randomHex(t, 32)})

	values := fmt.Sprintf(`image:
  tag: %q
  pullPolicy: Never
config:
  files:
    main.sbx.hcl: |
      provider "kubernetes" {
        namespace = %q
        image "postgres" { ref = "sandboxer.local/postgres:17" }
      }
      project "agents" {
        services = ["postgres"]
      }
      sandbox "agent" {
        project   = project.agents
        on_demand = true
        ttl       = "30m"
      }
serve:
  shutdownDelaySeconds: 1
  extraEnv:
    - name: KUBERNETES_SERVICE_HOST
      value: %q
    - name: KUBERNETES_SERVICE_PORT
      value: %q
`, testenv.SourceVersion(t), ns, apiserver.Hostname(), apiserver.Port())
	vfile := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(vfile, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	installed := time.Now()
	if out, err := kubeHelm("install", release, chartDir, "--values", vfile, "--wait", "--timeout", "3m"); err != nil {
		t.Fatalf("helm install: %v\n%s%s", err, out, podReport(ctx, cs, ns))
	}
	uninstalled := false
	t.Cleanup(func() {
		if !uninstalled {
			_, _ = kubeHelm("uninstall", release, "--wait")
		}
	})
	ready := time.Since(installed)

	// The replicas at their pod IPs.
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release + ",app.kubernetes.io/name=sandboxer"})
	if err != nil {
		t.Fatal(err)
	}
	var replicas []string
	for _, p := range pods.Items {
		if podReady(&p) && p.Status.PodIP != "" {
			replicas = append(replicas, "http://"+p.Status.PodIP+":8080")
		}
	}
	if len(replicas) != 2 {
		t.Fatalf("%d ready replicas, want the default 2%s", len(replicas), podReport(ctx, cs, ns))
	}
	call := func(base, path string, body any, out any) int {
		t.Helper()
		b, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+token)
		c := &http.Client{Timeout: 4 * time.Minute}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s%s: %v", base, path, err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode == 200 && out != nil {
			if err := json.Unmarshal(data, out); err != nil {
				t.Fatalf("%s: %v: %s", path, err, data)
			}
		} else if resp.StatusCode != 200 {
			t.Logf("%s%s: %d %s", base, path, resp.StatusCode, data)
		}
		return resp.StatusCode
	}
	var first, second api.Sandbox
	if s := call(replicas[0], api.PathRequest, api.RequestBody{Address: "sandbox.agent", Key: "e2e"}, &first); s != 200 {
		t.Fatalf("the first request: %d%s", s, podReport(ctx, cs, ns))
	}
	firstServed := time.Since(installed)
	if s := call(replicas[1], api.PathRequest, api.RequestBody{Address: "sandbox.agent", Key: "e2e"}, &second); s != 200 || !second.Reused {
		t.Errorf("the same key on the other replica: %d, reused %v; want a cache hit", s, second.Reused)
	}
	pgURL := first.Env["SANDBOXER_POSTGRES_URL"]
	conn, err := pgx.Connect(ctx, pgURL)
	if err != nil {
		t.Fatalf("connect to the sandbox at its in-cluster address: %v", strings.ReplaceAll(err.Error(), first.Env["SANDBOXER_POSTGRES_PASSWORD"], "***"))
	}
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		t.Errorf("SELECT 1 in the sandbox: %v %d", err, one)
	}
	_ = conn.Close(ctx)
	if ready > 60*time.Second || firstServed > 60*time.Second {
		t.Errorf("install to ready %s, to the first request served %s; want both within 60 s", ready.Round(time.Second), firstServed.Round(time.Second))
	}
	t.Logf("install to both replicas ready %s; to the first request served (a cold sandbox) %s", ready.Round(100*time.Millisecond), firstServed.Round(100*time.Millisecond))

	var rel struct{ Released bool }
	if s := call(replicas[1], api.PathRelease, api.ReleaseBody{Address: first.Address}, &rel); s != 200 || !rel.Released {
		t.Errorf("release: %d %v", s, rel.Released)
	}
	if out, err := kubeHelm("uninstall", release, "--wait", "--timeout", "2m"); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	uninstalled = true
	// Nothing of sandboxer's (labelled dev.sandboxer.*) and nothing of the
	// chart's is left in the namespace.
	waitFor(t, 2*time.Minute, "nothing labelled left", func() bool {
		left := 0
		for _, sel := range []string{"dev.sandboxer.managed=true", "app.kubernetes.io/instance=" + release} {
			ps, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
			if err != nil {
				return false
			}
			left += len(ps.Items)
			ss, err := cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
			if err != nil {
				return false
			}
			left += len(ss.Items)
			svcs, err := cs.CoreV1().Services(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
			if err != nil {
				return false
			}
			left += len(svcs.Items)
		}
		return left == 0
	})
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// podReport is the namespace's pods with their phase and last container
// states, for a failure message (no Secret values: pods hold none).
func podReport(ctx context.Context, cs *k8s.Clientset, ns string) string {
	ps, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return "\n(pods: " + err.Error() + ")"
	}
	var b strings.Builder
	b.WriteString("\npods:")
	for _, p := range ps.Items {
		fmt.Fprintf(&b, "\n  %s %s", p.Name, p.Status.Phase)
		for _, c := range p.Status.ContainerStatuses {
			fmt.Fprintf(&b, " [%s ready=%v restarts=%d", c.Name, c.Ready, c.RestartCount)
			if w := c.State.Waiting; w != nil {
				fmt.Fprintf(&b, " waiting %s: %s", w.Reason, w.Message)
			}
			if tm := c.LastTerminationState.Terminated; tm != nil {
				fmt.Fprintf(&b, " last exit %d %s", tm.ExitCode, tm.Reason)
			}
			b.WriteString("]")
		}
	}
	return b.String()
}

func waitFor(t *testing.T, d time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, d)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func randomHex(t *testing.T, n int) string {
	t.Helper()
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
