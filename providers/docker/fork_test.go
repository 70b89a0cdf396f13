package docker

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/api/types/volume"
	"github.com/jackc/pgx/v5"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/providers/internal/kit"
	"github.com/sandboxer/sandboxer/services"
	pgsvc "github.com/sandboxer/sandboxer/services/postgres"
	redissvc "github.com/sandboxer/sandboxer/services/redis"
	"github.com/sandboxer/sandboxer/state"
)

// pgConn logs in as c's app user.
func pgConn(ctx context.Context, t testing.TB, c state.Credentials) *pgx.Conn {
	t.Helper()
	tlsConf, err := c.ClientTLS(c.Host)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := pgsvc.Connect(ctx, c.Host, c.Port, c.User, c.Password, c.Database, tlsConf)
	if err != nil {
		t.Fatalf("connect to postgres on port %d: %v", c.Port, err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// forkSource creates a postgres+redis instance holding a table, a
// sequence and keys with and without a TTL.
func forkSource(ctx context.Context, t *testing.T, p *Provider, lineage string, publish config.Publish) (*state.Record, *pgx.Conn) {
	t.Helper()
	req := apply.CreateRequest{Address: `sandbox.fk["src"]`, Lineage: lineage, Generation: 1,
		Features: config.FeatureSet{"postgres": {}, "redis": {}}, Publish: publish}
	made, err := p.Create(ctx, req)
	if err != nil {
		t.Fatalf("Create source: %v", err)
	}
	src := recordFor(req, made)
	src.Reach = state.Reach{PublishAddress: publish.Address, AdvertiseHost: publish.AdvertiseHost, TLS: publish.TLS}
	conn := pgConn(ctx, t, made.Credentials["postgres"])
	for _, q := range []string{
		`CREATE TABLE rows (id bigserial PRIMARY KEY, v text NOT NULL)`,
		`CREATE SEQUENCE tick START 100`,
		`SELECT nextval('tick')`,
		`INSERT INTO rows (v) SELECT md5(i::text) FROM generate_series(1, 1000) i`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	rc := made.Credentials["redis"]
	tlsConf, _ := rc.ClientTLS(rc.Host)
	rdb := redissvc.Client(rc.Host, rc.Port, rc.User, rc.Password, tlsConf)
	defer rdb.Close()
	if err := rdb.Set(ctx, "keep", "forever", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, "brief", "an hour", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	return src, conn
}

func forkReqs(lineage string, src *state.Record, n int) []apply.CreateRequest {
	reqs := make([]apply.CreateRequest, n)
	pub := config.Publish{Address: src.Reach.PublishAddress, AdvertiseHost: src.Reach.AdvertiseHost, TLS: src.Reach.TLS}
	if pub.Address == "" {
		pub = config.DefaultPublish()
	}
	for i := range reqs {
		reqs[i] = apply.CreateRequest{Address: fmt.Sprintf(`sandbox.fk["copy-%d"]`, i+1), Lineage: lineage, Generation: 1,
			Features: src.Features, Database: src.Credentials["postgres"].Database, Publish: pub}
	}
	return reqs
}

// TestForkWithWriter forks a postgres+redis instance into three copies
// while a writer commits rows one by one: every row committed before
// the fork began is in every copy, none begun after it returned; the
// copies have the keys with their TTLs, their own credentials, and do
// not let one another's in. The writer's longest wait is the hold-up.
func TestForkWithWriter(t *testing.T) {
	for _, tc := range []struct {
		name, storage string
		noOverlay     bool // fill each copy rather than share a base
	}{
		{"volume", config.StorageVolume, false},
		{"volume-filled", config.StorageVolume, true},
		{"tmpfs", config.StorageTmpfs, false},
	} {
		storage := tc.storage
		t.Run(tc.name, func(t *testing.T) {
			p, secrets := newTestProvider(t)
			p.cfg.Storage = storage
			p.forkNoOverlay = tc.noOverlay
			lineage := newLineage(t, p)
			ctx := context.Background()
			src, _ := forkSource(ctx, t, p, lineage, config.Publish{})

			// The writer: one committed INSERT after another, each
			// noted with when it began and ended.
			wconn := pgConn(ctx, t, src.Credentials["postgres"])
			type write struct {
				id         int64
				began, end time.Time
			}
			var (
				mu     sync.Mutex
				writes []write
				stop   = make(chan struct{})
				wdone  = make(chan error, 1)
			)
			go func() {
				for {
					select {
					case <-stop:
						wdone <- nil
						return
					default:
					}
					began := time.Now()
					var id int64
					if err := wconn.QueryRow(ctx, `INSERT INTO rows (v) VALUES ('w') RETURNING id`).Scan(&id); err != nil {
						wdone <- err
						return
					}
					mu.Lock()
					writes = append(writes, write{id, began, time.Now()})
					mu.Unlock()
				}
			}()
			p.onForkCapture = func(svc string, c services.ForkCopy) {
				t.Logf("%s: %s captured by %s, held %s (%s)", storage, svc, c.Method, c.Held.Round(time.Millisecond), c.Steps)
			}
			time.Sleep(300 * time.Millisecond)
			forkBegan := time.Now()
			forked, err := p.Fork(ctx, src, forkReqs(lineage, src, 3))
			forkEnded := time.Now()
			secrets.assertClean(t, err)
			if err != nil {
				close(stop)
				<-wdone
				t.Fatalf("Fork: %v", err)
			}
			time.Sleep(200 * time.Millisecond)
			close(stop)
			if err := <-wdone; err != nil {
				t.Fatalf("writer: %v", err)
			}
			var maxWait time.Duration
			var before, after []int64
			for _, w := range writes {
				maxWait = max(maxWait, w.end.Sub(w.began))
				if w.end.Before(forkBegan) {
					before = append(before, w.id)
				}
				if w.began.After(forkEnded) {
					after = append(after, w.id)
				}
			}
			t.Logf("%s: fork of %d bytes into 3 copies in %s, methods %v, held %s; the writer's longest wait %s; %d writes before, %d after",
				storage, forked.Bytes, forkEnded.Sub(forkBegan).Round(time.Millisecond), forked.Methods, forked.Held.Round(time.Millisecond),
				maxWait.Round(time.Millisecond), len(before), len(after))
			if len(before) == 0 || len(after) == 0 {
				t.Fatalf("the writer wrote %d rows before the fork and %d after; the test proves nothing", len(before), len(after))
			}
			// The capture's method, then the path each copy was filled
			// by: inside the engine from volume to volume, or streamed
			// for a tmpfs no other container sees.
			// On volume storage, one copy of the stage shared under an
			// overlay each where the engine mounts overlayfs (this
			// machine's does: the probe must say so).
			wantMethod := map[string]string{config.StorageVolume: "copy+volume", config.StorageTmpfs: "memory+stream"}[storage]
			if storage == config.StorageVolume && !tc.noOverlay {
				p.overlay.mu.Lock()
				known, ok, move, why := p.overlay.known, p.overlay.ok, p.overlay.move, p.overlay.why
				p.overlay.mu.Unlock()
				if !known || !ok {
					t.Errorf("the engine mounts no overlayfs volume (probed: %v): %s", known, why)
				}
				// And lets a helper bind the volumes' directory, so the
				// stage is renamed into the base, not copied.
				if !move {
					t.Errorf("the probe found no rename from volume to volume")
				}
				wantMethod = "copy+overlay"
			}
			if m := forked.Methods["postgres"]; m != wantMethod && m != strings.Replace(wantMethod, "copy", "reflink", 1) {
				t.Errorf("postgres method %q, want %q", m, wantMethod)
			}
			wantRedis := "rdb+stream"
			if wantMethod == "copy+overlay" {
				wantRedis = "rdb+overlay"
			}
			if forked.Methods["redis"] != wantRedis {
				t.Errorf("redis method %q, want %s", forked.Methods["redis"], wantRedis)
			}

			seen := map[string]bool{}
			for _, c := range src.Credentials {
				seen[c.Password.Reveal()] = true
				seen[c.AdminPassword.Reveal()] = true
			}
			for i, made := range forked.Created {
				req := forkReqs(lineage, src, 3)[i]
				rec := recordFor(req, made)
				t.Cleanup(func() { _ = p.Delete(context.Background(), rec) })
				for svc, c := range made.Credentials {
					for _, pw := range []string{c.Password.Reveal(), c.AdminPassword.Reveal()} {
						if seen[pw] {
							t.Errorf("copy %d: %s shares a password with the source or another copy", i+1, svc)
						}
						seen[pw] = true
					}
				}
				pc := made.Credentials["postgres"]
				conn := pgConn(ctx, t, pc)
				var n, maxID int64
				if err := conn.QueryRow(ctx, `SELECT count(*), max(id) FROM rows`).Scan(&n, &maxID); err != nil {
					t.Fatalf("copy %d: %v", i+1, err)
				}
				var missing, extra int
				for _, id := range before {
					var ok bool
					_ = conn.QueryRow(ctx, `SELECT true FROM rows WHERE id = $1`, id).Scan(&ok)
					if !ok {
						missing++
					}
				}
				for _, id := range after {
					var ok bool
					_ = conn.QueryRow(ctx, `SELECT true FROM rows WHERE id = $1`, id).Scan(&ok)
					if ok {
						extra++
					}
				}
				if missing > 0 || extra > 0 {
					t.Errorf("copy %d: %d rows committed before the fork are missing, %d begun after it are present", i+1, missing, extra)
				}
				var next int64
				if err := conn.QueryRow(ctx, `SELECT nextval('tick')`).Scan(&next); err != nil || next <= 100 {
					t.Errorf("copy %d: the sequence says %d (%v), want past 100", i+1, next, err)
				}
				// It writes on its own: the copies before it wrote a row
				// each, and it sees only its own.
				if _, err := conn.Exec(ctx, `INSERT INTO rows (v) VALUES ('copy')`); err != nil {
					t.Errorf("copy %d: insert: %v", i+1, err)
				}
				var mine int64
				if err := conn.QueryRow(ctx, `SELECT count(*) FROM rows WHERE v = 'copy'`).Scan(&mine); err != nil || mine != 1 {
					t.Errorf("copy %d sees %d rows written in copies (%v), want its own 1", i+1, mine, err)
				}
				rc := made.Credentials["redis"]
				rdb := redissvc.Client(rc.Host, rc.Port, rc.User, rc.Password, nil)
				if v, err := rdb.Get(ctx, "keep").Result(); err != nil || v != "forever" {
					t.Errorf("copy %d: redis keep = %q, %v", i+1, v, err)
				}
				if ttl, err := rdb.TTL(ctx, "brief").Result(); err != nil || ttl <= 50*time.Minute || ttl > time.Hour {
					t.Errorf("copy %d: redis brief's TTL = %s, %v; want just under an hour", i+1, ttl, err)
				}
				rdb.Close()
				// The source's and the other copies' passwords do not
				// open this copy.
				others := []state.Credentials{src.Credentials["postgres"]}
				for j, o := range forked.Created {
					if j != i {
						others = append(others, o.Credentials["postgres"])
					}
				}
				for _, o := range others {
					if c, err := pgsvc.Connect(ctx, pc.Host, pc.Port, o.User, o.Password, pc.Database, nil); err == nil {
						c.Close(ctx)
						t.Errorf("copy %d lets another instance's password in", i+1)
					}
				}
			}
			// The source goes on, with its own rows only.
			var n int64
			if err := wconn.QueryRow(ctx, `SELECT count(*) FROM rows WHERE v = 'copy'`).Scan(&n); err != nil || n != 0 {
				t.Errorf("source: %d rows written in copies (%v)", n, err)
			}
			// The copies gone, nothing of the fork is left: no base, no
			// upper volume, nothing labelled with the lineage but the
			// source's.
			for i, made := range forked.Created {
				if err := p.Delete(ctx, recordFor(forkReqs(lineage, src, 3)[i], made)); err != nil {
					t.Errorf("delete copy %d: %v", i+1, err)
				}
			}
			left, err := p.ListManaged(ctx, lineage)
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range left {
				if m.Address != src.Address && m.Kind != KindNetwork {
					t.Errorf("left after the copies were deleted: %s %s (address %q)", m.Kind, m.Name, m.Address)
				}
			}
			vs, err := p.cli.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelLineage+"="+lineage))})
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range vs.Volumes {
				if v.Labels[LabelForkBase] != "" || v.Labels[LabelForkUpper] != "" {
					t.Errorf("fork volume %s left after the copies were deleted", v.Name)
				}
			}
			assertNoUnlabelledVolumes(t, p, lineage)
		})
	}
}

// TestForkTLS forks a sandbox published with TLS: the copy has a CA of
// its own (not the source's), serves TLS with it, and the source's CA
// does not verify the copy's server.
func TestForkTLS(t *testing.T) {
	p, secrets := newTestProvider(t)
	p.ReadyTimeout = loadedReadyTimeout
	p.ProbeTimeout = 30 * time.Second
	p.CADir = t.TempDir()
	lineage := newLineage(t, p)
	ip := hostAddress(t)
	ctx := context.Background()
	src, _ := forkSource(ctx, t, p, lineage, config.Publish{Address: ip, AdvertiseHost: ip, TLS: true})
	defer p.Delete(ctx, src)
	forked, err := p.Fork(ctx, src, forkReqs(lineage, src, 1))
	secrets.assertClean(t, err)
	if err != nil {
		t.Fatalf("Fork: %v", err)
	}
	cp := recordFor(forkReqs(lineage, src, 1)[0], forked.Created[0])
	defer p.Delete(ctx, cp)
	for _, svc := range []string{"postgres", "redis"} {
		s, c := src.Credentials[svc], cp.Credentials[svc]
		if c.CA == "" || c.CA == s.CA || c.CAFile == s.CAFile {
			t.Errorf("%s: the copy's CA is missing or the source's", svc)
		}
	}
	pc := cp.Credentials["postgres"]
	conn := pgConn(ctx, t, pc) // verify-full against the copy's own CA
	var ssl bool
	var n int64
	if err := conn.QueryRow(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl); err != nil || !ssl {
		t.Errorf("the copy's connection is not TLS (ssl=%v, err=%v)", ssl, err)
	}
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM rows").Scan(&n); err != nil || n != 1000 {
		t.Errorf("the copy holds %d rows (%v), want 1000", n, err)
	}
	// The source's CA does not vouch for the copy.
	srcTLS, err := src.Credentials["postgres"].ClientTLS(pc.Host)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := pgsvc.Connect(ctx, pc.Host, pc.Port, pc.User, pc.Password, pc.Database, srcTLS); err == nil {
		c.Close(ctx)
		t.Error("the source's CA verified the copy's server")
	}
	rc := cp.Credentials["redis"]
	rcTLS, _ := rc.ClientTLS(rc.Host)
	rdb := redissvc.Client(rc.Host, rc.Port, rc.User, rc.Password, rcTLS)
	defer rdb.Close()
	if v, err := rdb.Get(ctx, "keep").Result(); err != nil || v != "forever" {
		t.Errorf("the copy's redis over TLS: %q, %v", v, err)
	}
}

// TestForkOfAFork forks a copy that lives on an overlay: its data
// volume is the overlay, which the next fork's base copies through the
// merged view. The grandchild has the copy's own write and the source's
// rows, not a write the source made after the first fork; the middle
// copy deleted first (its fork's base goes with it), the grandchild,
// on a base of its own, still serves; with both gone no fork volume
// is left.
func TestForkOfAFork(t *testing.T) {
	p, _ := newTestProvider(t)
	p.cfg.Storage = config.StorageVolume
	lineage := newLineage(t, p)
	ctx := context.Background()
	src, srcConn := forkSource(ctx, t, p, lineage, config.Publish{})

	first, err := p.Fork(ctx, src, forkReqs(lineage, src, 1))
	if err != nil {
		t.Fatalf("Fork: %v", err)
	}
	mid := recordFor(forkReqs(lineage, src, 1)[0], first.Created[0])
	t.Cleanup(func() { _ = p.Delete(context.Background(), mid) })
	if _, err := pgConn(ctx, t, mid.Credentials["postgres"]).Exec(ctx, `INSERT INTO rows (v) VALUES ('middle')`); err != nil {
		t.Fatal(err)
	}
	if _, err := srcConn.Exec(ctx, `INSERT INTO rows (v) VALUES ('source, later')`); err != nil {
		t.Fatal(err)
	}

	req := apply.CreateRequest{Address: `sandbox.fk["grandchild"]`, Lineage: lineage, Generation: 1,
		Features: mid.Features, Database: mid.Credentials["postgres"].Database, Publish: config.DefaultPublish()}
	second, err := p.Fork(ctx, mid, []apply.CreateRequest{req})
	if err != nil {
		t.Fatalf("Fork of the copy: %v", err)
	}
	if m := second.Methods["postgres"]; m != first.Methods["postgres"] {
		t.Errorf("the copy forked by %q, the source by %q", m, first.Methods["postgres"])
	}
	grand := recordFor(req, second.Created[0])
	t.Cleanup(func() { _ = p.Delete(context.Background(), grand) })

	if err := p.Delete(ctx, mid); err != nil {
		t.Fatalf("delete the middle copy: %v", err)
	}
	conn := pgConn(ctx, t, grand.Credentials["postgres"])
	var all, middle, later int64
	if err := conn.QueryRow(ctx, `SELECT count(*), count(*) FILTER (WHERE v = 'middle'), count(*) FILTER (WHERE v = 'source, later') FROM rows`).Scan(&all, &middle, &later); err != nil {
		t.Fatalf("the grandchild, its parent gone: %v", err)
	}
	if all != 1001 || middle != 1 || later != 0 {
		t.Errorf("the grandchild has %d rows, %d of the middle copy's, %d the source wrote later; want 1001, 1, 0", all, middle, later)
	}
	rc := grand.Credentials["redis"]
	rdb := redissvc.Client(rc.Host, rc.Port, rc.User, rc.Password, nil)
	defer rdb.Close()
	if v, err := rdb.Get(ctx, "keep").Result(); err != nil || v != "forever" {
		t.Errorf("the grandchild's redis: keep = %q, %v", v, err)
	}

	if err := p.Delete(ctx, grand); err != nil {
		t.Fatalf("delete the grandchild: %v", err)
	}
	vs, err := p.cli.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelLineage+"="+lineage))})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs.Volumes {
		if v.Labels[LabelForkBase] != "" || v.Labels[LabelForkUpper] != "" {
			t.Errorf("fork volume %s left after both copies were deleted", v.Name)
		}
	}
	assertNoUnlabelledVolumes(t, p, lineage)
}

// assertNoUnlabelledVolumes fails on a volume named as lineage's that
// does not carry its labels: one the engine made again by name (a
// container mounting a volume removed meanwhile), which no reap finds.
// (A sweep of a copy that ran after the overlay made the copy's upper
// volume did that once.)
func assertNoUnlabelledVolumes(t *testing.T, p *Provider, lineage string) {
	t.Helper()
	prefix := "sbx-" + kit.LineagePart(lineage, sanitize) + "-"
	vs, err := p.cli.VolumeList(context.Background(), volume.ListOptions{Filters: filters.NewArgs(filters.Arg("name", prefix))})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vs.Volumes {
		if strings.HasPrefix(v.Name, prefix) && v.Labels[LabelLineage] != lineage {
			t.Errorf("volume %s is named as the lineage's but does not carry its labels (labels %v)", v.Name, v.Labels)
		}
	}
}

// A fork killed while its helper container ran leaves the helper (it
// carries one copy's labels) mounting volumes of other copies: reap
// removes each copy's orphans in turn, so a volume's removal may come
// first. It removes the helper then, rather than failing "in use".
func TestRemoveVolumeHeldByAHelper(t *testing.T) {
	p, _ := newTestProvider(t)
	lineage := newLineage(t, p)
	ctx := context.Background()
	name := instanceName(lineage, `sandbox.fk["a"]`, 1) + "-upper-test"
	if _, err := p.cli.VolumeCreate(ctx, volume.CreateOptions{Name: name, Driver: "local",
		Labels: instanceLabels(`sandbox.fk["a"]`, lineage, 1)}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cli.VolumeRemove(context.Background(), name, true) })
	labels := instanceLabels(`sandbox.fk["b"]`, lineage, 1)
	labels[LabelForkFill] = "true"
	resp, err := p.cli.ContainerCreate(ctx, &container.Config{Image: "sandboxer.local/redis:7", Entrypoint: []string{"sleep", "600"}, Labels: labels},
		&container.HostConfig{NetworkMode: "none", Mounts: []mount.Mount{{Type: mount.TypeVolume, Source: name, Target: "/held"}}}, nil, nil, "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.cli.ContainerRemove(context.Background(), resp.ID, container.RemoveOptions{Force: true}) })
	if err := p.cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := p.cli.VolumeRemove(ctx, name, true); !cerrdefs.IsConflict(err) {
		t.Fatalf("the engine removed a volume in use (%v): the test proves nothing", err)
	}
	if err := p.DeleteManaged(ctx, []Managed{{Kind: KindVolume, ID: name, Name: name}}); err != nil {
		t.Fatalf("DeleteManaged: %v", err)
	}
	if _, err := p.cli.VolumeInspect(ctx, name); !cerrdefs.IsNotFound(err) {
		t.Errorf("the volume is still there (%v)", err)
	}
	if _, err := p.cli.ContainerInspect(ctx, resp.ID); !cerrdefs.IsNotFound(err) {
		t.Errorf("the helper is still there (%v)", err)
	}
}
