package kubernetes

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	pgsvc "github.com/sandboxer/sandboxer/services/postgres"
	redissvc "github.com/sandboxer/sandboxer/services/redis"
	"github.com/sandboxer/sandboxer/state"
)

// forkReqs are n copies' create requests, as the broker makes them.
func forkReqs(lineage, prefix string, n int, src *state.Record, pub config.Publish) []apply.CreateRequest {
	reqs := make([]apply.CreateRequest, n)
	for i := range reqs {
		reqs[i] = apply.CreateRequest{Address: fmt.Sprintf(`sandbox.fork["%s-%d"]`, prefix, i+1), Lineage: lineage, Generation: 1,
			Features: src.Features, Database: src.Credentials["postgres"].Database, Publish: pub}
	}
	return reqs
}

// copyRecords records what a fork made and deletes it when the test ends.
func copyRecords(t *testing.T, p *Provider, reqs []apply.CreateRequest, f *apply.Forked) []*state.Record {
	t.Helper()
	var out []*state.Record
	for i, made := range f.Created {
		rec := &state.Record{Address: reqs[i].Address, Services: reqs[i].Features.Services(), Features: reqs[i].Features,
			Credentials: made.Credentials, Resources: made.Resources, Generation: 1}
		out = append(out, rec)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := p.Delete(ctx, rec); err != nil {
				t.Errorf("cleanup: Delete %s: %v", rec.Address, err)
			}
		})
	}
	return out
}

// stageLeft lists the fork stages left in the source's data directory.
func stageLeft(t *testing.T, p *Provider, rec *state.Record) string {
	t.Helper()
	var out strings.Builder
	r := podRunner{p: p, pod: rec.Resources.Pod, container: rec.Resources.Containers["postgres"]}
	mustf(t, r.Exec(context.Background(), "", []string{"sh", "-c", `ls -a "$PGDATA" | grep '^\.sbx-' || true`}, &out), "list the source's data directory")
	return strings.TrimSpace(out.String())
}

// A fork on the cluster, with a writer committing rows one by one on the
// source through it: every row committed before the fork began is in
// each copy, no row begun after it returned is in any; the Redis keys are
// there with their TTLs; the copies' passwords are their own (neither
// the source's nor the other copy's log in), a write in one copy is in
// no other, no secret is in a copy's pod spec, and the stage is gone
// from the source.
func TestForkOnCluster(t *testing.T) {
	t.Parallel()
	p, secrets := newTestProvider(t)
	p.ForkFills = 1 // the copies' fills take turns (forkFrom.fills)
	lineage := newLineage(t, p)
	src := createInstance(t, p, apply.CreateRequest{Address: `sandbox.fork["base"]`, Lineage: lineage, Generation: 1, Features: bare()})
	ctx := ctxFor(t, 5*time.Minute)
	pg, rc := src.Credentials["postgres"], src.Credentials["redis"]
	conn, err := pgsvc.Connect(ctx, pg.Host, pg.Port, pg.User, pg.Password, pg.Database, nil)
	mustf(t, err, "connect to the source")
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, "CREATE TABLE t (id int PRIMARY KEY); CREATE SEQUENCE s; SELECT nextval('s') FROM generate_series(1, 5)")
	mustf(t, err, "create")
	rdb := redissvc.Client(rc.Host, rc.Port, rc.User, rc.Password, nil)
	defer rdb.Close()
	mustf(t, rdb.Set(ctx, "kept", "v", 0).Err(), "SET")
	mustf(t, rdb.Set(ctx, "ttl", "v", time.Hour).Err(), "SET with a TTL")

	type row struct {
		id         int
		begin, end time.Time
	}
	var (
		mu   sync.Mutex
		rows []row
	)
	wctx, stop := context.WithCancel(ctx)
	writerDone := make(chan error, 1)
	go func() {
		for id := 1; ; id++ {
			begin := time.Now()
			_, err := conn.Exec(wctx, "INSERT INTO t VALUES ($1)", id)
			if wctx.Err() != nil {
				writerDone <- nil
				return
			}
			if err != nil {
				writerDone <- err
				return
			}
			mu.Lock()
			rows = append(rows, row{id, begin, time.Now()})
			mu.Unlock()
			time.Sleep(5 * time.Millisecond)
		}
	}()
	time.Sleep(500 * time.Millisecond)
	reqs := forkReqs(lineage, "try", 2, src, config.Publish{})
	began := time.Now()
	f, err := p.Fork(ctx, src, reqs)
	returned := time.Now()
	time.Sleep(300 * time.Millisecond)
	stop()
	mustf(t, <-writerDone, "the writer")
	mustf(t, err, "Fork")
	copies := copyRecords(t, p, reqs, f)
	t.Logf("fork of 2 copies: %s, held %s, methods %v, %d bytes", returned.Sub(began), f.Held, f.Methods, f.Bytes)
	if f.Methods["redis"] != "rdb" || f.Methods["postgres"] == "" || f.Bytes <= 0 || f.Held <= 0 {
		t.Errorf("Forked %+v", f)
	}
	mu.Lock()
	var before, after []int
	for _, r := range rows {
		if r.end.Before(began) {
			before = append(before, r.id)
		}
		if r.begin.After(returned) {
			after = append(after, r.id)
		}
	}
	mu.Unlock()
	if len(before) == 0 || len(after) == 0 {
		t.Fatalf("the writer committed %d rows before the fork and began %d after it: the check is vacuous", len(before), len(after))
	}
	for i, cp := range copies {
		c := cp.Credentials["postgres"]
		if c.Password.Reveal() == pg.Password.Reveal() || c.AdminPassword.Reveal() == pg.AdminPassword.Reveal() {
			t.Errorf("copy %d has the source's password", i+1)
		}
		if err := pgsvc.Ping(ctx, c.Host, c.Port, c.User, pg.Password, c.Database, nil); err == nil {
			t.Errorf("the source's password logs in to copy %d", i+1)
		}
		other := copies[1-i].Credentials["postgres"]
		if err := pgsvc.Ping(ctx, c.Host, c.Port, c.User, other.Password, c.Database, nil); err == nil {
			t.Errorf("copy %d's password logs in to copy %d", 2-i, i+1)
		}
		cc, err := pgsvc.Connect(ctx, c.Host, c.Port, c.User, c.Password, c.Database, nil)
		mustf(t, err, "connect to copy %d", i+1)
		var missing, extra int
		mustf(t, cc.QueryRow(ctx, "SELECT count(*) FROM unnest($1::int[]) AS b(id) WHERE id NOT IN (SELECT id FROM t)", before).Scan(&missing), "query")
		mustf(t, cc.QueryRow(ctx, "SELECT count(*) FROM t WHERE id = ANY($1::int[])", after).Scan(&extra), "query")
		if missing != 0 || extra != 0 {
			t.Errorf("copy %d: %d of %d rows committed before the fork missing, %d of %d begun after it present", i+1, missing, len(before), extra, len(after))
		}
		var next int
		mustf(t, cc.QueryRow(ctx, "SELECT nextval('s')").Scan(&next), "nextval")
		if next < 6 {
			t.Errorf("copy %d's sequence restarted at %d", i+1, next)
		}
		_, err = cc.Exec(ctx, fmt.Sprintf("CREATE TABLE mine_%d (x int)", i+1))
		mustf(t, err, "write in copy %d", i+1)
		cc.Close(ctx)
		r := cp.Credentials["redis"]
		if r.Password.Reveal() == rc.Password.Reveal() {
			t.Errorf("copy %d has the source's Redis password", i+1)
		}
		if err := redissvc.Ping(ctx, r.Host, r.Port, r.User, rc.Password, nil); err == nil {
			t.Errorf("the source's Redis password logs in to copy %d", i+1)
		}
		cr := redissvc.Client(r.Host, r.Port, r.User, r.Password, nil)
		v, err := cr.Get(ctx, "kept").Result()
		ttl, terr := cr.TTL(ctx, "ttl").Result()
		cr.Close()
		if err != nil || v != "v" || terr != nil || ttl <= 0 || ttl > time.Hour {
			t.Errorf("copy %d's Redis: kept=%q (%v), ttl=%s (%v)", i+1, v, err, ttl, terr)
		}
		pod, err := p.cs.CoreV1().Pods(p.ns).Get(ctx, cp.Resources.Pod, metav1.GetOptions{})
		mustf(t, err, "get copy %d's pod", i+1)
		b, _ := json.Marshal(pod)
		secrets.assertNoSecret(t, fmt.Sprintf("copy %d's pod", i+1), string(b))
	}
	// Each copy's write is its own.
	for i, cp := range append([]*state.Record{src}, copies...) {
		c := cp.Credentials["postgres"]
		cc, err := pgsvc.Connect(ctx, c.Host, c.Port, c.User, c.Password, c.Database, nil)
		mustf(t, err, "connect to %s", cp.Address)
		var n int
		mustf(t, cc.QueryRow(ctx, "SELECT count(*) FROM pg_tables WHERE tablename LIKE 'mine_%'").Scan(&n), "query")
		cc.Close(ctx)
		if want := min(i, 1); n != want {
			t.Errorf("%s sees %d tables written in the copies, want %d", cp.Address, n, want)
		}
	}
	if left := stageLeft(t, p, src); left != "" {
		t.Errorf("the source keeps the stage: %s", left)
	}
}

// A fork of a TLS sandbox: the copy has its own CA, which verifies it,
// and the source's does not.
func TestForkTLSOnCluster(t *testing.T) {
	t.Parallel()
	p, _ := newTestProvider(t)
	lineage := newLineage(t, p)
	pub := config.Publish{TLS: true}
	src := createInstance(t, p, apply.CreateRequest{Address: `sandbox.fork["tls"]`, Lineage: lineage, Generation: 1, Features: bare(), Publish: pub})
	ctx := ctxFor(t, 5*time.Minute)
	reqs := forkReqs(lineage, "tls", 1, src, pub)
	f, err := p.Fork(ctx, src, reqs)
	mustf(t, err, "Fork")
	cp := copyRecords(t, p, reqs, f)[0]
	c, s := cp.Credentials["postgres"], src.Credentials["postgres"]
	if c.CA == "" || c.CA == s.CA {
		t.Fatal("the copy has no CA of its own")
	}
	mustf(t, p.Probe(ctx, cp), "Probe the copy over TLS")
	connect := func(ca state.Credentials) error {
		tc, err := ca.ClientTLS(c.NetworkHost)
		if err != nil {
			return err
		}
		cfg, err := pgx.ParseConfig(fmt.Sprintf("host=%s port=%d user=%s dbname=%s", c.Host, c.Port, c.User, c.Database))
		if err != nil {
			return err
		}
		cfg.Password, cfg.TLSConfig = c.Password.Reveal(), tc
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err == nil {
			conn.Close(ctx)
		}
		return err
	}
	mustf(t, connect(c), "verify the copy with its own CA")
	if err := connect(s); err == nil {
		t.Error("the source's CA verifies the copy")
	}
}

// A fork whose second copy fails midway (an object of its name that is
// not sandboxer's stands in the way, found after the first copy's
// objects exist) leaves nothing: no copy's objects, no stage in the
// source, which still serves.
func TestForkFailedCopyLeavesNothing(t *testing.T) {
	t.Parallel()
	p, _ := newTestProvider(t)
	lineage := newLineage(t, p)
	src := createInstance(t, p, apply.CreateRequest{Address: `sandbox.fork["fail"]`, Lineage: lineage, Generation: 1, Features: bare()})
	ctx := ctxFor(t, 5*time.Minute)
	reqs := forkReqs(lineage, "fail", 2, src, config.Publish{})
	blocker := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: podName(lineage, reqs[1].Address, 1)}}
	_, err := p.cs.CoreV1().Secrets(p.ns).Create(ctx, blocker, metav1.CreateOptions{})
	mustf(t, err, "create the blocking secret")
	t.Cleanup(func() {
		_ = p.cs.CoreV1().Secrets(p.ns).Delete(context.Background(), blocker.Name, metav1.DeleteOptions{})
	})
	_, err = p.Fork(ctx, src, reqs)
	if err == nil || !strings.Contains(err.Error(), "not labelled as sandboxer's") {
		t.Fatalf("Fork with a blocked copy: %v, want the blocked copy's error", err)
	}
	left, err := p.ListManaged(ctx, lineage)
	mustf(t, err, "ListManaged")
	for _, r := range left {
		if r.Address != src.Address && r.Kind != apply.KindService && r.Kind != apply.KindNetworkPolicy {
			t.Errorf("left behind: %s %s (%s)", r.Kind, r.Name, r.Address)
		}
	}
	if left := stageLeft(t, p, src); left != "" {
		t.Errorf("the source keeps the stage: %s", left)
	}
	if _, err := p.cs.CoreV1().Secrets(p.ns).Get(ctx, blocker.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the Secret that was not sandboxer's was removed: %v", err)
	}
	mustf(t, p.Probe(ctx, src), "the source after a failed fork")
}

// TestForkFigures measures a fork of a small postgres+redis sandbox
// (10,000 rows, 1,000 keys) into 1 and then 10 copies on the cluster,
// with a writer committing rows on the source throughout: the fork's
// time, the hold the capture reports and the writer's longest wait. Run
// with SANDBOXER_KUBE_FORK_FIGURES=1 (docs/fork.md, performance.md).
func TestForkFigures(t *testing.T) {
	if os.Getenv("SANDBOXER_KUBE_FORK_FIGURES") == "" {
		t.Skip("set SANDBOXER_KUBE_FORK_FIGURES=1 to measure")
	}
	p, _ := newTestProvider(t)
	// The default ready timeout: a copy's fill, which waits its turn
	// (DefaultForkFills at once), is not counted in it.
	lineage := newLineage(t, p)
	src := createInstance(t, p, apply.CreateRequest{Address: `sandbox.fig["base"]`, Lineage: lineage, Generation: 1, Features: bare()})
	ctx := ctxFor(t, 20*time.Minute)
	pg, rc := src.Credentials["postgres"], src.Credentials["redis"]
	conn, err := pgsvc.Connect(ctx, pg.Host, pg.Port, pg.User, pg.Password, pg.Database, nil)
	mustf(t, err, "connect")
	defer conn.Close(context.Background())
	_, err = conn.Exec(ctx, "CREATE TABLE fill AS SELECT g AS id, md5(g::text) AS v FROM generate_series(1, 10000) g; CREATE TABLE w (id serial PRIMARY KEY, at timestamptz DEFAULT now())")
	mustf(t, err, "fill")
	rdb := redissvc.Client(rc.Host, rc.Port, rc.User, rc.Password, nil)
	defer rdb.Close()
	for i := range 1000 {
		mustf(t, rdb.Set(ctx, fmt.Sprintf("k%d", i), strings.Repeat("x", 100), 0).Err(), "SET")
	}
	for _, n := range []int{1, 10} {
		wctx, stop := context.WithCancel(ctx)
		var longest time.Duration
		done := make(chan struct{})
		go func() {
			defer close(done)
			for wctx.Err() == nil {
				t0 := time.Now()
				if _, err := conn.Exec(wctx, "INSERT INTO w DEFAULT VALUES"); err != nil {
					return
				}
				longest = max(longest, time.Since(t0))
				time.Sleep(2 * time.Millisecond)
			}
		}()
		reqs := forkReqs(lineage, fmt.Sprintf("n%d", n), n, src, config.Publish{})
		t0 := time.Now()
		f, err := p.Fork(ctx, src, reqs)
		took := time.Since(t0)
		stop()
		<-done
		mustf(t, err, "Fork into %d", n)
		copies := copyRecords(t, p, reqs, f)
		t.Logf("fork into %d copies: %s (%s per copy), %d bytes, methods %v, held %s, the writer's longest wait %s",
			n, took.Round(time.Millisecond), (took / time.Duration(n)).Round(time.Millisecond), f.Bytes, f.Methods, f.Held.Round(time.Millisecond), longest.Round(time.Millisecond))
		dctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		for _, c := range copies {
			_ = p.Delete(dctx, c)
		}
		cancel()
	}
}

// A fill stream that stops moving (the proxy in front of the API server
// passes no byte either way once it has carried 1 MiB, until the client
// closes it) is cut after Provider.ForkStall and sent again: the fork
// succeeds with the copy whole, in about the stall more than it would
// take, not after the caller's deadline.
func TestForkFillStallIsSentAgain(t *testing.T) {
	t.Parallel()
	cp, kc := newStallProxy(t, 0, 1<<20) // armed below, for the fork alone
	p := providerThrough(t, kc)
	p.ForkStall = 3 * time.Second
	lineage := newLineage(t, p)
	src := createInstance(t, p, apply.CreateRequest{Address: `sandbox.fork["stalled"]`, Lineage: lineage, Generation: 1, Features: bare()})
	ctx := ctxFor(t, 4*time.Minute)
	pg := src.Credentials["postgres"]
	conn, err := pgsvc.Connect(ctx, pg.Host, pg.Port, pg.User, pg.Password, pg.Database, nil)
	mustf(t, err, "connect to the source")
	_, err = conn.Exec(ctx, "CREATE TABLE t AS SELECT g AS id FROM generate_series(1, 1000) g")
	conn.Close(context.Background())
	mustf(t, err, "create")

	cp.remaining.Store(1)
	reqs := forkReqs(lineage, "stall", 1, src, config.Publish{})
	began := time.Now()
	f, err := p.Fork(ctx, src, reqs)
	took := time.Since(began)
	mustf(t, err, "Fork with a stalled fill stream")
	copies := copyRecords(t, p, reqs, f)
	if n := cp.done.Load(); n != 1 {
		t.Fatalf("the proxy stalled %d exec streams, want 1 (the test proves nothing otherwise)", n)
	}
	t.Logf("fork with one stalled fill stream: %s (stall allowance %s)", took.Round(time.Millisecond), p.ForkStall)
	c := copies[0].Credentials["postgres"]
	cc, err := pgsvc.Connect(ctx, c.Host, c.Port, c.User, c.Password, c.Database, nil)
	mustf(t, err, "connect to the copy")
	defer cc.Close(context.Background())
	var n int
	mustf(t, cc.QueryRow(ctx, "SELECT count(*) FROM t").Scan(&n), "count the copy's rows")
	if n != 1000 {
		t.Errorf("the copy has %d rows, want 1000", n)
	}
}
