package kubernetes

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/utils/ptr"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	pgsvc "github.com/sandboxer/sandboxer/services/postgres"
	redissvc "github.com/sandboxer/sandboxer/services/redis"
	"github.com/sandboxer/sandboxer/snapshot"
	"github.com/sandboxer/sandboxer/state"
)

// From the host, through the pod IP: the handed-out role works on its
// database, Redis answers as the app user, and the endpoints are what the
// package promises.
func TestHostClientsByPodIP(t *testing.T) {
	t.Parallel() // each test has its own lineage (or namespace) and provider
	p, _ := newTestProvider(t)
	lineage := newLineage(t, p)
	rec := createInstance(t, p, apply.CreateRequest{Address: "sandbox.host", Lineage: lineage, Generation: 1, Features: bare()})
	ctx := ctxFor(t, time.Minute)
	pg := rec.Credentials["postgres"]
	wantDNS := rec.Resources.Pod + "." + sharedName(lineage) + "." + p.ns + ".svc.cluster.local"
	if pg.NetworkHost != wantDNS || pg.NetworkPort != 5432 || pg.Port != 5432 {
		t.Errorf("postgres endpoints %s:%d / %s:%d, want pod IP:5432 / %s:5432", pg.Host, pg.Port, pg.NetworkHost, pg.NetworkPort, wantDNS)
	}
	if rec.Resources.Runtime != state.RuntimeKubernetes || rec.Resources.Namespace != p.ns || rec.Resources.Containers["redis"] != "redis" {
		t.Errorf("resources %+v", rec.Resources)
	}
	conn, err := pgsvc.Connect(ctx, pg.Host, pg.Port, pg.User, pg.Password, pg.Database, nil)
	mustf(t, err, "connect to postgres at %s", pg.Host)
	defer conn.Close(ctx)
	var super bool
	_, err = conn.Exec(ctx, "CREATE TABLE t (x int); INSERT INTO t VALUES (1)")
	mustf(t, err, "create a table as the handed-out role")
	mustf(t, conn.QueryRow(ctx, "SELECT rolsuper FROM pg_roles WHERE rolname = current_user").Scan(&super), "query")
	if super {
		t.Error("the handed-out role is a superuser")
	}
	rc := rec.Credentials["redis"]
	rdb := redissvc.Client(rc.Host, rc.Port, rc.User, rc.Password, nil)
	defer rdb.Close()
	mustf(t, rdb.Set(ctx, "k", "v", 0).Err(), "redis SET")
	if err := rdb.Do(ctx, "CONFIG", "SET", "save", "").Err(); err == nil {
		t.Error("the app user may CONFIG SET")
	}
}

// From a client pod in the cluster, with the in-cluster name: psql and
// redis-cli of the images themselves. The password reaches the client
// through exec's stdin, never its spec.
func TestInClusterClientsByServiceName(t *testing.T) {
	t.Parallel() // each test has its own lineage (or namespace) and provider
	p, _ := newTestProvider(t)
	lineage := newLineage(t, p)
	rec := createInstance(t, p, apply.CreateRequest{Address: "sandbox.incluster", Lineage: lineage, Generation: 1, Features: bare(), Database: "appdb"})
	ctx := ctxFor(t, 2*time.Minute)
	pg, rc := rec.Credentials["postgres"], rec.Credentials["redis"]
	for _, tc := range []struct {
		image, script, secret, want string
	}{
		{testPostgresImage(), fmt.Sprintf(`read -r PGPASSWORD; export PGPASSWORD; psql -X -At "host=%s port=%d user=%s dbname=%s sslmode=disable" -c "SELECT current_user || '@' || current_database()"`,
			pg.NetworkHost, pg.NetworkPort, pg.User, pg.Database), pg.Password.Reveal(), "app@appdb"},
		{testRedisImage(), fmt.Sprintf(`read -r REDISCLI_AUTH; export REDISCLI_AUTH; redis-cli -h %s -p %d --user %s --no-auth-warning PING`,
			rc.NetworkHost, rc.NetworkPort, rc.User), rc.Password.Reveal(), "PONG"},
	} {
		out := runClientPod(t, ctx, p, sharedName(lineage), tc.image, tc.script, tc.secret)
		if strings.TrimSpace(out) != tc.want {
			t.Errorf("client of %s printed %q, want %q", tc.image, out, tc.want)
		}
	}
}

// runClientPod runs script in a client pod of a lineage's sandboxes
// (labelled as its client, clientOf the lineage's shared name, so its
// NetworkPolicy admits it), with stdin as its input.
func runClientPod(t *testing.T, ctx context.Context, p *Provider, clientOf, image, script, stdin string) string {
	t.Helper()
	name := "sbx-client-" + randomSuffix()
	pod := p.inspectionPod(name, image, []string{"sleep", "120"}, nil)
	pod.Labels = map[string]string{LabelClientOf: clientOf, LabelInspect: "true"}
	if _, err := p.runInspection(ctx, pod, nil); err != nil {
		t.Fatalf("client pod: %v", err)
	}
	defer p.deleteInspection(ctx, name)
	var out bytes.Buffer
	r := podRunner{p: p, pod: name, container: "inspect"}
	if err := r.execStdin(ctx, []string{"sh", "-c", script}, strings.NewReader(stdin+"\n"), &out); err != nil {
		t.Fatalf("client in the cluster: %v", err)
	}
	return out.String()
}

// A deleted pod, and a pod whose service stopped, make Probe say
// ErrNotFound (the plan then calls the sandbox dead and replaces it).
func TestDeadPodIsNotFound(t *testing.T) {
	t.Parallel() // each test has its own lineage (or namespace) and provider
	p, _ := newTestProvider(t)
	lineage := newLineage(t, p)
	ctx := ctxFor(t, 2*time.Minute)
	killed := createInstance(t, p, apply.CreateRequest{Address: "sandbox.killed", Lineage: lineage, Generation: 1, Features: bare()})
	mustf(t, p.cs.CoreV1().Pods(p.ns).Delete(ctx, killed.Resources.Pod, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}), "delete pod")
	mustf(t, p.waitGone(ctx, killed.Resources.Pod), "wait for the pod to go")
	if err := p.Probe(ctx, killed); !errors.Is(err, apply.ErrNotFound) {
		t.Errorf("Probe of a deleted pod = %v, want ErrNotFound", err)
	}
	stopped := createInstance(t, p, apply.CreateRequest{Address: "sandbox.stopped", Lineage: lineage, Generation: 1, Features: bare()})
	// PostgreSQL is PID 1 of its container: a fast shutdown ends it.
	r := podRunner{p: p, pod: stopped.Resources.Pod, container: "postgres"}
	mustf(t, r.Exec(ctx, "", []string{"sh", "-c", "kill -INT 1"}, nil), "stop postgres")
	err := p.watchPod(ctx, stopped.Resources.Pod, "", func(pod *corev1.Pod) (bool, error) {
		return pod == nil || deadReason(pod, stopped) != "", nil
	})
	mustf(t, err, "wait for the container to stop")
	if err := p.Probe(ctx, stopped); !errors.Is(err, apply.ErrNotFound) {
		t.Errorf("Probe of a pod whose postgres stopped = %v, want ErrNotFound", err)
	}
}

// No password in the pod's spec, status, environment or arguments, in the
// Service or NetworkPolicy, in annotations or in the namespace's events.
func TestNoSecretsInSpecsOrEvents(t *testing.T) {
	t.Parallel() // each test has its own lineage (or namespace) and provider
	p, secrets := newTestProvider(t)
	lineage := newLineage(t, p)
	rec := createInstance(t, p, apply.CreateRequest{Address: "sandbox.leak", Lineage: lineage, Generation: 1, Features: bare(),
		Publish: config.Publish{TLS: true}})
	ctx := ctxFor(t, time.Minute)
	name := rec.Resources.Pod
	pod, err := p.cs.CoreV1().Pods(p.ns).Get(ctx, name, metav1.GetOptions{})
	mustf(t, err, "get pod")
	// The lineage's shared Service and NetworkPolicy (none of the
	// sandbox's own any more): no secret, no owner (they outlive any one
	// sandbox), labelled as shared.
	svc, err := p.cs.CoreV1().Services(p.ns).Get(ctx, sharedName(lineage), metav1.GetOptions{})
	mustf(t, err, "get the shared service")
	np, err := p.cs.NetworkingV1().NetworkPolicies(p.ns).Get(ctx, sharedName(lineage), metav1.GetOptions{})
	mustf(t, err, "get the shared networkpolicy")
	for what, obj := range map[string]any{"pod": pod, "service": svc, "networkpolicy": np} {
		b, _ := json.Marshal(obj)
		secrets.assertNoSecret(t, what, string(b))
		if what != "pod" {
			m := obj.(metav1.Object)
			if len(m.GetOwnerReferences()) != 0 || m.GetLabels()[LabelShared] != "true" {
				t.Errorf("shared %s: owners %v, labels %v", what, m.GetOwnerReferences(), m.GetLabels())
			}
		}
	}
	for _, kind := range []string{"services", "networkpolicies"} {
		var err error
		if kind == "services" {
			_, err = p.cs.CoreV1().Services(p.ns).Get(ctx, name, metav1.GetOptions{})
		} else {
			_, err = p.cs.NetworkingV1().NetworkPolicies(p.ns).Get(ctx, name, metav1.GetOptions{})
		}
		if !isNotFound(err) {
			t.Errorf("the sandbox has %s of its own (err %v)", kind, err)
		}
	}
	sec, err := p.cs.CoreV1().Secrets(p.ns).Get(ctx, name, metav1.GetOptions{})
	mustf(t, err, "get secret")
	if !ownedBy(sec.ObjectMeta, rec.ResourceAddress()) || string(sec.UID) != rec.Resources.Owned[ownedSecret] || string(pod.UID) != rec.Resources.Owned[ownedPod] {
		t.Errorf("secret labels %v, UIDs %s/%s, record %v", sec.Labels, pod.UID, sec.UID, rec.Resources.Owned)
	}
	if _, ok := sec.Data[tlsKeyName]; ok {
		t.Error("the TLS key is in the Secret")
	}
	events, err := p.cs.CoreV1().Events(p.ns).List(ctx, metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("involvedObject.name", name).String()})
	mustf(t, err, "list events")
	if len(events.Items) == 0 {
		t.Error("no events for the pod: the check is vacuous")
	}
	b, _ := json.Marshal(events)
	secrets.assertNoSecret(t, "events", string(b))
	for _, c := range pod.Spec.Containers {
		sc := c.SecurityContext
		if sc.RunAsUser == nil || *sc.RunAsUser == 0 || *sc.AllowPrivilegeEscalation {
			t.Errorf("container %s runs as %v, escalation %v", c.Name, sc.RunAsUser, *sc.AllowPrivilegeEscalation)
		}
	}
}

// A TLS instance: both services speak TLS only, verified against the
// instance's CA under the pod IP (as handed out) and the Service name.
func TestTLSInstance(t *testing.T) {
	t.Parallel() // each test has its own lineage (or namespace) and provider
	p, _ := newTestProvider(t)
	lineage := newLineage(t, p)
	rec := createInstance(t, p, apply.CreateRequest{Address: "sandbox.tls", Lineage: lineage, Generation: 1, Features: bare(),
		Publish: config.Publish{TLS: true}})
	ctx := ctxFor(t, time.Minute)
	mustf(t, p.Probe(ctx, rec), "Probe over TLS")
	pg := rec.Credentials["postgres"]
	if pg.CA == "" || pg.CAFile == "" {
		t.Fatalf("no CA handed out: %+v", pg.CAFile)
	}
	if _, err := os.Stat(pg.CAFile); err != nil {
		t.Errorf("CA file: %v", err)
	}
	if err := pgsvc.Ping(ctx, pg.Host, pg.Port, pg.User, pg.Password, pg.Database, nil); err == nil {
		t.Error("postgres accepted a login without TLS")
	}
	tlsConf, err := pg.ClientTLS(pg.NetworkHost)
	mustf(t, err, "client TLS")
	// The certificate names the Service's DNS name too (dialled by IP).
	cfg, err := pgx.ParseConfig(fmt.Sprintf("host=%s port=%d user=%s dbname=%s", pg.Host, pg.Port, pg.User, pg.Database))
	mustf(t, err, "parse")
	cfg.Password, cfg.TLSConfig = pg.Password.Reveal(), tlsConf
	conn, err := pgx.ConnectConfig(ctx, cfg)
	mustf(t, err, "connect verifying the Service name")
	conn.Close(ctx)
	rc := rec.Credentials["redis"]
	if err := redissvc.Ping(ctx, rc.Host, rc.Port, rc.User, rc.Password, nil); err == nil {
		t.Error("redis answered without TLS")
	}
	mustf(t, p.Delete(ctx, rec), "Delete")
	if _, err := os.Stat(pg.CAFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("CA file after Delete: %v", err)
	}
	// The lineage's last sandbox gone, apply's end-of-run sweep removes
	// what it shared.
	mustf(t, p.SweepShared(ctx, lineage), "SweepShared")
	assertNothingLabelled(t, p, lineage)
}

// Snapshot, restore and seed SQL go through the exec API: a dump taken
// from one instance loads into another; seed SQL runs as the app role.
func TestDataThroughExec(t *testing.T) {
	t.Parallel() // each test has its own lineage (or namespace) and provider
	p, _ := newTestProvider(t)
	lineage := newLineage(t, p)
	ctx := ctxFor(t, 3*time.Minute)
	feats := config.FeatureSet{"postgres": {"vector"}, "redis": {}}
	src := createInstance(t, p, apply.CreateRequest{Address: "sandbox.src", Lineage: lineage, Generation: 1, Features: feats})
	dst := createInstance(t, p, apply.CreateRequest{Address: "sandbox.dst", Lineage: lineage, Generation: 1, Features: feats})
	seed := filepath.Join(t.TempDir(), "seed.sql")
	mustf(t, os.WriteFile(seed, []byte("CREATE TABLE items (id int, v vector(2)); INSERT INTO items VALUES (1, '[1,2]'), (2, '[3,4]');\n"), 0o644), "write seed")
	mustf(t, p.RunSQL(ctx, src, []snapshot.SQLFile{{Name: "seed.sql", Path: seed}}), "RunSQL")
	bad := filepath.Join(t.TempDir(), "bad.sql")
	mustf(t, os.WriteFile(bad, []byte("SELECT nope;\n"), 0o644), "write")
	if err := p.RunSQL(ctx, src, []snapshot.SQLFile{{Name: "bad.sql", Path: bad}}); err == nil || !strings.Contains(err.Error(), "bad.sql") {
		t.Errorf("RunSQL of a failing file = %v, want an error naming it", err)
	}
	rc := src.Credentials["redis"]
	rdb := redissvc.Client(rc.Host, rc.Port, rc.User, rc.Password, nil)
	defer rdb.Close()
	mustf(t, rdb.Set(ctx, "greeting", "hello", 0).Err(), "SET")
	dir := t.TempDir()
	for _, svc := range []string{"postgres", "redis"} {
		path := filepath.Join(dir, svc+".dump")
		f, err := os.Create(path)
		mustf(t, err, "create")
		mustf(t, p.Dump(ctx, src, svc, f), "Dump %s", svc)
		f.Close()
		st, _ := os.Stat(path)
		mustf(t, p.Load(ctx, dst, svc, snapshot.Data{Key: fmt.Sprintf("%s-%d", svc, st.Size()) + strings.Repeat("0", 40), Path: path, Size: st.Size()}), "Load %s", svc)
	}
	pg := dst.Credentials["postgres"]
	conn, err := pgsvc.Connect(ctx, pg.Host, pg.Port, pg.User, pg.Password, pg.Database, nil)
	mustf(t, err, "connect")
	defer conn.Close(ctx)
	var n int
	mustf(t, conn.QueryRow(ctx, "SELECT count(*) FROM items WHERE v IS NOT NULL").Scan(&n), "count")
	if n != 2 {
		t.Errorf("restored %d rows, want 2", n)
	}
	dc := dst.Credentials["redis"]
	drdb := redissvc.Client(dc.Host, dc.Port, dc.User, dc.Password, nil)
	defer drdb.Close()
	if v, err := drdb.Get(ctx, "greeting").Result(); err != nil || v != "hello" {
		t.Errorf("restored redis key = %q, %v", v, err)
	}
}

// A missing namespace is a located error at New.
func TestMissingNamespace(t *testing.T) {
	t.Parallel() // each test has its own lineage (or namespace) and provider
	p, _ := newTestProvider(t)
	cfg := *p.cfg
	cfg.Namespace = "sbx-missing-" + randomSuffix()
	_, err := New(ctxFor(t, 30*time.Second), &cfg, p.cat)
	if err == nil || !strings.Contains(err.Error(), cfg.Namespace) || !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), "server https://") {
		t.Errorf("New with a missing namespace: %v", err)
	}
}
