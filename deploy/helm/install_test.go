package helm

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
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
	// Agent pods as tenants: ns's ServiceAccount "agent" is tenant
	// agents; every ServiceAccount of another namespace is tenant others.
	ns2 := ns + "-other"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns2,
		Labels: map[string]string{"sandboxer.dev/test": "true"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns2, metav1.DeleteOptions{})
	})
	for _, sa := range [][2]string{{ns, "agent"}, {ns2, "outsider"}} {
		if _, err := cs.CoreV1().ServiceAccounts(sa[0]).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa[1]}},
			metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	secret("agent-tenants", map[string]string{"tenants.hcl": fmt.Sprintf("tenant \"agents\" {\n  service_accounts = [%q]\n}\ntenant \"others\" {\n  service_accounts = [%q]\n}\n",
		ns+":agent", ns2+":*")})
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
tenants:
  existingSecret: agent-tenants
service:
  clusterIP: None
serve:
  shutdownDelaySeconds: 1
  reapInterval: 5s
  kubeAuthAudience: sandboxer
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
	// The 60 s target is a speed figure: checked where it is measured
	// (make bench-kube sets SANDBOXER_HELM_TIMING=1), logged here, where
	// a fresh CI machine compiles beside it (load 15-25: 1m52s).
	if os.Getenv("SANDBOXER_HELM_TIMING") != "" && (ready > 60*time.Second || firstServed > 60*time.Second) {
		t.Errorf("install to ready %s, to the first request served %s; want both within 60 s", ready.Round(time.Second), firstServed.Round(time.Second))
	}
	t.Logf("install to both replicas ready %s; to the first request served (a cold sandbox) %s", ready.Round(100*time.Millisecond), firstServed.Round(100*time.Millisecond))

	// An agent pod requests a sandbox through the Service with its
	// projected ServiceAccount token and queries it at the in-cluster
	// address; a pod of another namespace lists nothing of it.
	svc := fmt.Sprintf("%s-sandboxer.%s.svc.cluster.local", release, ns)
	agentLog := runAgent(t, cs, ns, "agent", svc, `t0=${EPOCHREALTIME/./}
resp=$(req POST /v1/request '{"address":"sandbox.agent","key":"from-pod"}')
echo "COLD $(( ${EPOCHREALTIME/./} - t0 ))"
for i in $(seq 1 100); do
  t0=${EPOCHREALTIME/./}
  req POST /v1/request '{"address":"sandbox.agent","key":"from-pod"}' | head -1 | grep -q ' 200 ' || echo "HIT FAILED"
  echo "HIT $(( ${EPOCHREALTIME/./} - t0 ))"
done
printf '%s\n' "$resp" | head -1
url=$(printf '%s' "$resp" | grep -o '"SANDBOXER_POSTGRES_URL": *"[^"]*"' | sed -e 's/.*: *"//' -e 's/"$//' -e 's/\\u0026/\&/g')
[ -n "$url" ] || { echo "no url in the answer"; exit 1; }
psql "$url" -tAc 'select 40 + 2' && echo AGENT-OK`)
	if !strings.Contains(agentLog, " 200 OK") || !strings.Contains(agentLog, "42") || !strings.Contains(agentLog, "AGENT-OK") ||
		strings.Contains(agentLog, "HIT FAILED") {
		t.Errorf("the agent pod:\n%s", agentLog)
	}
	// What the agent pod measured through the Service (a new connection
	// per call, the token reviewed once and cached).
	var cold time.Duration
	var hits []time.Duration
	for _, line := range strings.Split(agentLog, "\n") {
		var us int64
		if _, err := fmt.Sscanf(line, "COLD %d", &us); err == nil {
			cold = time.Duration(us) * time.Microsecond
		} else if _, err := fmt.Sscanf(line, "HIT %d", &us); err == nil {
			hits = append(hits, time.Duration(us)*time.Microsecond)
		}
	}
	if len(hits) == 100 {
		slices.Sort(hits)
		t.Logf("from an agent pod through the Service: cold request %s; 100 cache hits p50 %s, p99 %s",
			cold.Round(time.Millisecond), hits[49].Round(100*time.Microsecond), hits[98].Round(100*time.Microsecond))
	} else {
		t.Errorf("the agent pod measured %d cache hits, want 100", len(hits))
	}
	outsiderLog := runAgent(t, cs, ns2, "outsider", svc, `req GET /v1/sandboxes ''`)
	if !strings.Contains(outsiderLog, " 200 OK") || strings.Contains(outsiderLog, "from-pod") || strings.Contains(outsiderLog, "e2e") {
		t.Errorf("a pod of another namespace lists:\n%s", outsiderLog)
	}
	for _, l := range []string{agentLog, outsiderLog} {
		if strings.Contains(l, token) || strings.Contains(l, "eyJ") {
			t.Error("a pod's log holds a token")
		}
	}
	var list api.SandboxList
	req, _ := http.NewRequest(http.MethodGet, replicas[0]+api.PathSandboxes, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if resp, err := http.DefaultClient.Do(req); err == nil {
		_ = json.NewDecoder(resp.Body).Decode(&list)
		resp.Body.Close()
	}
	agentAddr := ""
	for _, in := range list.Sandboxes {
		if strings.Contains(in.Address, "from-pod") {
			agentAddr = in.Address
			if in.Owner != "agents" {
				t.Errorf("the agent's instance %s is owned by %q, want agents", in.Address, in.Owner)
			}
		}
	}
	if agentAddr == "" {
		t.Errorf("the operator's list has no instance of the agent pod: %+v", list.Sandboxes)
	} else if s := call(replicas[0], api.PathRelease, api.ReleaseBody{Address: agentAddr}, nil); s != 200 {
		t.Errorf("release the agent's instance: %d", s)
	}

	// A burst: 60 concurrent requests for 12 keys over both replicas make
	// 12 provisions (the others wait for them and are cache hits).
	quick := &http.Client{Timeout: 90 * time.Second, Transport: &http.Transport{
		DialContext: (&net.Dialer{Timeout: 3 * time.Second}).DialContext}}
	post := func(base string, key string) (api.Sandbox, error) {
		var sb api.Sandbox
		b, _ := json.Marshal(api.RequestBody{Address: "sandbox.agent", Key: key})
		req, _ := http.NewRequest(http.MethodPost, base+api.PathRequest, bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := quick.Do(req)
		if err != nil {
			return sb, err
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			return sb, fmt.Errorf("%d %s", resp.StatusCode, data)
		}
		return sb, json.Unmarshal(data, &sb)
	}
	var mu sync.Mutex
	// requestKey asks replica i, then the next on any failure, until one
	// answers (a client's retry).
	firstErrs := map[string]int{}
	requestKey := func(i int, key string) (api.Sandbox, int, error) {
		deadline := time.Now().Add(4 * time.Minute)
		for tries := 1; ; tries++ {
			sb, err := post(replicas[(i+tries-1)%len(replicas)], key)
			if err == nil || time.Now().After(deadline) {
				return sb, tries, err
			}
			if tries == 1 {
				msg := err.Error()
				if len(msg) > 120 {
					msg = msg[:120]
				}
				mu.Lock()
				firstErrs[msg]++
				mu.Unlock()
			}
			time.Sleep(500 * time.Millisecond)
		}
	}
	burstStart := time.Now()
	var wg sync.WaitGroup
	fresh := 0
	for i := range 60 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sb, _, err := requestKey(i, fmt.Sprintf("burst-%d", i%12))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err != nil:
				t.Errorf("burst request %d: %v", i, err)
			case !sb.Reused:
				fresh++
			}
		}()
	}
	wg.Wait()
	if fresh != 12 {
		t.Errorf("60 requests for 12 keys over 2 replicas: %d provisions, want 12", fresh)
	}
	t.Logf("60 requests for 12 keys over 2 replicas: %s", time.Since(burstStart).Round(100*time.Millisecond))
	// SANDBOXER_TEST_DEBUG_BURST=1 logs when each sandbox pod of the burst
	// was made and became ready, the inspection pods' events and the
	// replicas' non-call log lines (how the stalls that a bridge without
	// its own MAC address caused were found: docs/performance.md).
	if os.Getenv("SANDBOXER_TEST_DEBUG_BURST") != "" {
		ps, _ := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "sandboxer.dev/managed=true"})
		for _, p := range ps.Items {
			line := fmt.Sprintf("%s created %s", p.Name, p.CreationTimestamp.Sub(burstStart).Round(100*time.Millisecond))
			for _, c := range p.Status.Conditions {
				line += fmt.Sprintf(" %s@%s", c.Type, c.LastTransitionTime.Sub(burstStart).Round(100*time.Millisecond))
			}
			for _, c := range p.Status.ContainerStatuses {
				if c.State.Running != nil {
					line += fmt.Sprintf(" %s-running@%s", c.Name, c.State.Running.StartedAt.Sub(burstStart).Round(100*time.Millisecond))
				}
			}
			t.Log(line)
		}
		evs, _ := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
		for _, e := range evs.Items {
			if strings.HasPrefix(e.InvolvedObject.Name, "sbx-inspect") {
				t.Logf("event %s %s %s: %s", e.FirstTimestamp.Sub(burstStart).Round(100*time.Millisecond), e.InvolvedObject.Name, e.Reason, e.Message)
			}
		}
		rs, _ := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release})
		for _, p := range rs.Items {
			l, _ := cs.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			for _, line := range strings.Split(string(l), "\n") {
				if !strings.Contains(line, `"msg":"call"`) || strings.Contains(line, "burst-1\\\"") {
					t.Logf("%s: %s", p.Name, line)
				}
			}
		}
	}
	// No replica restarted under the burst.
	if ps, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/instance=" + release}); err == nil {
		for _, p := range ps.Items {
			for _, c := range p.Status.ContainerStatuses {
				if c.RestartCount > 0 {
					t.Errorf("replica %s restarted %d times under the burst%s", p.Name, c.RestartCount, podReport(ctx, cs, ns))
				}
			}
		}
	}

	// A replica killed (grace period 0) in the middle of a burst: every
	// request succeeds on retry, one instance per key, and once all are
	// released the janitor leaves nothing behind (what the dead replica
	// was making is an orphan it removes).
	victim := ""
	for _, p := range pods.Items {
		if "http://"+p.Status.PodIP+":8080" == replicas[0] {
			victim = p.Name
		}
	}
	killStart := time.Now()
	retried := 0
	for i := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, tries, err := requestKey(i, fmt.Sprintf("kill-%d", i%6))
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				t.Errorf("request %d with a replica killed: %v", i, err)
			}
			if tries > 1 {
				retried++
			}
		}()
	}
	time.Sleep(time.Second)
	zero := int64(0)
	if err := cs.CoreV1().Pods(ns).Delete(ctx, victim, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	t.Logf("24 requests for 6 keys, replica %s killed after 1 s: all answered in %s, %d after a retry; first failures: %v", victim,
		time.Since(killStart).Round(100*time.Millisecond), retried, firstErrs)
	survivor := replicas[1]
	listAll := func() []api.Instance {
		var l api.SandboxList
		req, _ := http.NewRequest(http.MethodGet, survivor+api.PathSandboxes, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := quick.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
			t.Fatal(err)
		}
		return l.Sandboxes
	}
	kills := 0
	for _, in := range listAll() {
		if strings.Contains(in.Address, `"kill-`) {
			kills++
		}
	}
	if kills != 6 {
		t.Errorf("%d instances of the 6 kill-N keys in the state", kills)
	}
	for _, in := range listAll() {
		if strings.Contains(in.Address, "burst-") || strings.Contains(in.Address, "kill-") {
			if s := call(survivor, api.PathRelease, api.ReleaseBody{Address: in.Address}, nil); s != 200 {
				t.Errorf("release %s: %d", in.Address, s)
			}
		}
	}

	var rel struct{ Released bool }
	if s := call(replicas[1], api.PathRelease, api.ReleaseBody{Address: first.Address}, &rel); s != 200 || !rel.Released {
		t.Errorf("release: %d %v", s, rel.Released)
	}
	// Every instance is released: the janitor (every 5 s, on the
	// replica that leads) removes what the killed replica left, and then
	// the lineages' shared objects.
	managedLeft := func() []string {
		var left []string
		ps, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "sandboxer.dev/managed=true"})
		if err != nil {
			return []string{err.Error()}
		}
		for _, p := range ps.Items {
			left = append(left, "pod/"+p.Name)
		}
		ss, err := cs.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "sandboxer.dev/managed=true"})
		if err != nil {
			return []string{err.Error()}
		}
		for _, o := range ss.Items {
			left = append(left, "secret/"+o.Name)
		}
		// A lineage's shared Service goes once none of its pods is left,
		// at the janitor's next pass.
		svcs, err := cs.CoreV1().Services(ns).List(ctx, metav1.ListOptions{LabelSelector: "sandboxer.dev/managed=true"})
		if err != nil {
			return []string{err.Error()}
		}
		for _, o := range svcs.Items {
			left = append(left, "service/"+o.Name)
		}
		return left
	}
	reapDeadline := time.Now().Add(2 * time.Minute)
	for left := managedLeft(); len(left) > 0; left = managedLeft() {
		if time.Now().After(reapDeadline) {
			t.Fatalf("left after every instance was released and the janitor ran: %v", left)
		}
		time.Sleep(time.Second)
	}
	if out, err := kubeHelm("uninstall", release, "--wait", "--timeout", "2m"); err != nil {
		t.Fatalf("helm uninstall: %v\n%s", err, out)
	}
	uninstalled = true
	// Nothing of sandboxer's (labelled sandboxer.dev/managed) and nothing
	// of the chart's is left in the namespace.
	waitFor(t, 2*time.Minute, "nothing labelled left", func() bool {
		left := 0
		for _, sel := range []string{"sandboxer.dev/managed=true", "app.kubernetes.io/instance=" + release} {
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

// runAgent runs a pod of ServiceAccount sa in ns that calls sandboxer's
// Service with its projected token (audience sandboxer) by the shell
// function req METHOD PATH BODY (HTTP/1.0 over bash's /dev/tcp: the
// image needs no client), runs script, and returns its log once it ended.
func runAgent(t *testing.T, cs *k8s.Clientset, ns, sa, host, script string) string {
	t.Helper()
	ctx := context.Background()
	const lib = `set -u
tok=$(cat /var/run/secrets/sandboxer/token)
req() {
  exec 3<>"/dev/tcp/$SBX_HOST/8080" || exit 3
  printf '%s %s HTTP/1.0\r\nHost: sandboxer\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s' "$1" "$2" "$tok" "${#3}" "$3" >&3
  cat <&3
  exec 3<&-
}
`
	expire := int64(600)
	name := sa + "-" + randomHex(t, 3)
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			ServiceAccountName: sa, AutomountServiceAccountToken: new(bool), RestartPolicy: corev1.RestartPolicyNever,
			Volumes: []corev1.Volume{{Name: "token", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{
					Audience: "sandboxer", ExpirationSeconds: &expire, Path: "token"}}}}}}},
			Containers: []corev1.Container{{
				Name: "agent", Image: "sandboxer.local/postgres:17", ImagePullPolicy: corev1.PullNever,
				Command:      []string{"bash", "-c", lib + script},
				Env:          []corev1.EnvVar{{Name: "SBX_HOST", Value: host}},
				VolumeMounts: []corev1.VolumeMount{{Name: "token", MountPath: "/var/run/secrets/sandboxer", ReadOnly: true}},
			}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 4*time.Minute, "the pod "+ns+"/"+name+" to end", func() bool {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		return err == nil && (p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed)
	})
	b, err := cs.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		t.Fatalf("the log of %s/%s: %v", ns, name, err)
	}
	return string(b)
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
				tail := int64(5)
				if l, err := cs.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{Container: c.Name, Previous: true, TailLines: &tail}).DoRaw(ctx); err == nil {
					fmt.Fprintf(&b, ", its log ends:\n%s", l)
				}
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
