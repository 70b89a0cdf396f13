package sandboxer_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/events"
	"github.com/sandboxer/sandboxer/internal/testenv"
	"github.com/sandboxer/sandboxer/state"
)

// Warm pools on the real engine: claims bind credentials nobody saw
// before and the old ones stop working; concurrent claims never share a
// member; reap leaves claimed instances alone and sweeps lost members.

const poolTLSFixture = `
provider "docker" {
  image "postgres" { ref = "sandboxer.local/postgres:17" }
  image "redis"    { ref = "sandboxer.local/redis:7" }
  tls = true
}

project "shop" {
  services = ["postgres", "redis"]
}

sandbox "agent" {
  project   = project.shop
  on_demand = true
  ttl       = "10m"
  pool {
    size = 2
  }
}
`

const poolRedisFixture = `
provider "docker" {
  image "redis" { ref = "sandboxer.local/redis:7" }
}

project "kv" {
  services = ["redis"]
}

sandbox "cache" {
  project   = project.kv
  on_demand = true
  ttl       = "10m"
  pool {
    size = 10
  }
}
`

// openPoolEngine opens src in a fresh directory (its own state, so its
// own lineage) and removes, at cleanup, everything labelled with it.
func openPoolEngine(t *testing.T, src string) *sandboxer.Sandboxer {
	t.Helper()
	testenv.RequireDocker(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	sb, err := sandboxer.Open(context.Background(), dir, sandboxer.Options{
		CacheDir: filepath.Join(dir, "cache"), ReadyTimeout: 4 * time.Minute, Events: failureLog{t}})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		sb.Close()
		if lin := poolLineage(sb); lin != "" {
			removeLabelled(t, "dev.sandboxer.lineage="+lin)
		}
	})
	return sb
}

// failureLog shows failed events (a claim that fell back to cold says
// why there); events never hold credentials.
type failureLog struct{ t *testing.T }

func (f failureLog) Emit(e events.Event) {
	if e.Event == events.Failed {
		f.t.Logf("event failed %s: %s", e.Address, e.Reason)
	}
}

func poolLineage(sb *sandboxer.Sandboxer) string {
	snap, err := sb.Store().Snapshot(context.Background())
	if err != nil {
		return ""
	}
	return snap.Lineage
}

func removeLabelled(t *testing.T, label string) {
	t.Helper()
	for _, kind := range [][]string{{"ps", "-aq"}, {"network", "ls", "-q"}, {"volume", "ls", "-q"}} {
		out, _ := exec.Command("docker", append(kind, "--filter", "label="+label)...).Output()
		ids := strings.Fields(string(out))
		if len(ids) == 0 {
			continue
		}
		rm := []string{"rm", "-f", "-v"}
		if kind[0] != "ps" {
			rm = []string{kind[0], "rm"}
		}
		_ = exec.Command("docker", append(rm, ids...)...).Run()
	}
}

// containersLabelled counts the engine's containers with label.
func containersLabelled(t *testing.T, label string) int {
	t.Helper()
	out, err := exec.Command("docker", "ps", "-aq", "--filter", "label="+label).Output()
	if err != nil {
		t.Fatalf("docker ps: %v", err)
	}
	return len(strings.Fields(string(out)))
}

func containerExists(t *testing.T, id string) bool {
	t.Helper()
	return exec.Command("docker", "container", "inspect", id).Run() == nil
}

// login tries the credentials with a real client of the service.
func login(ctx context.Context, svc string, c state.Credentials) error {
	var tlsConf *tls.Config
	if c.CA != "" {
		tlsConf = &tls.Config{RootCAs: rootsFromPEM(c.CA), ServerName: c.Host}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	switch svc {
	case "postgres":
		cfg, err := pgx.ParseConfig("sslmode=disable")
		if err != nil {
			return err
		}
		cfg.Host, cfg.Port, cfg.User, cfg.Password, cfg.Database = c.Host, uint16(c.Port), c.User, c.Password.Reveal(), c.Database
		cfg.TLSConfig = tlsConf
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		var one int
		return conn.QueryRow(ctx, "SELECT 1").Scan(&one)
	case "redis":
		rdb := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("%s:%d", c.Host, c.Port), Username: c.User,
			Password: c.Password.Reveal(), TLSConfig: tlsConf, MaxRetries: -1, DisableIdentity: true, Protocol: 2})
		defer rdb.Close()
		return rdb.Ping(ctx).Err()
	}
	return fmt.Errorf("no client for %s", svc)
}

func rootsFromPEM(pem string) *x509.CertPool {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM([]byte(pem))
	return pool
}

func TestPoolClaimBindsFreshCredentials(t *testing.T) {
	sb := openPoolEngine(t, poolTLSFixture)
	ctx := context.Background()
	st, err := sb.FillPool(ctx, "sandbox.agent")
	if err != nil {
		t.Fatalf("fill: %v", err)
	}
	if st.Ready != 2 || st.Filled != 2 {
		t.Fatalf("after fill: %+v", st)
	}
	// Every password anyone could have seen so far: the members' own (in
	// state, never handed out) and a cold instance's.
	seen := map[string]string{}
	members := map[string]*state.Record{}
	for _, addr := range st.Members {
		rec, err := sb.Store().Get(ctx, addr)
		if err != nil || rec == nil {
			t.Fatalf("member %s: %v", addr, err)
		}
		members[addr] = rec
		for svc, c := range rec.Credentials {
			seen[c.Password.Reveal()] = addr + " " + svc
			seen[c.AdminPassword.Reveal()] = addr + " " + svc + " admin"
		}
	}
	for i := range 2 {
		s, err := sb.Request(ctx, "sandbox.agent", sandboxer.RequestOptions{Key: fmt.Sprintf("claim%d", i)})
		if err != nil {
			t.Fatalf("claim %d: %v", i, err)
		}
		if !s.FromPool || s.Reused {
			t.Fatalf("claim %d: from_pool %v, reused %v", i, s.FromPool, s.Reused)
		}
		rec, err := sb.Store().Get(ctx, s.Address)
		if err != nil || rec == nil {
			t.Fatalf("claimed record: %v", err)
		}
		member := members[rec.LabelAddress]
		if member == nil {
			t.Fatalf("claimed record's label address %q is not a member", rec.LabelAddress)
		}
		for _, svc := range []string{"postgres", "redis"} {
			pw := s.Env["SANDBOXER_"+strings.ToUpper(svc)+"_PASSWORD"]
			if pw == "" || pw != rec.Credentials[svc].Password.Reveal() {
				t.Fatalf("%s: handed-out password is not the recorded one", svc)
			}
			if who, dup := seen[pw]; dup {
				t.Errorf("%s password of %s was seen before (%s)", svc, s.Address, who)
			}
			seen[pw] = s.Address + " " + svc
			if err := login(ctx, svc, rec.Credentials[svc]); err != nil {
				t.Errorf("%s: new credentials do not work: %v", svc, err)
			}
			if err := login(ctx, svc, member.Credentials[svc]); err == nil {
				t.Errorf("%s: the member's credentials still log in after the claim", svc)
			}
			if s.CA[svc] == "" || s.CA[svc] != member.Credentials[svc].CA {
				t.Errorf("%s: CA not the member's own", svc)
			}
		}
		// The claimed instance answers the probe with its new
		// credentials: a second request reuses it.
		again, err := sb.Request(ctx, "sandbox.agent", sandboxer.RequestOptions{Key: fmt.Sprintf("claim%d", i)})
		if err != nil || !again.Reused || again.FromPool {
			t.Fatalf("second request: reused %v, from_pool %v, %v", again != nil && again.Reused, again != nil && again.FromPool, err)
		}
	}
	// The pool is empty: the next request provisions cold.
	cold, err := sb.Request(ctx, "sandbox.agent", sandboxer.RequestOptions{Key: "cold"})
	if err != nil || cold.FromPool {
		t.Fatalf("cold request: from_pool %v, %v", cold != nil && cold.FromPool, err)
	}
	// Release of a claimed instance removes the member's containers.
	rec, _ := sb.Store().Get(ctx, `sandbox.agent["claim0"]`)
	if ok, err := sb.Release(ctx, "sandbox.agent", "claim0"); err != nil || !ok {
		t.Fatalf("release claimed: %v %v", ok, err)
	}
	for svc, id := range rec.Resources.Containers {
		if containerExists(t, id) {
			t.Errorf("%s container of the released claimed instance is still there", svc)
		}
	}
}

func TestPoolConcurrentClaimsAndReap(t *testing.T) {
	sb := openPoolEngine(t, poolRedisFixture)
	ctx := context.Background()
	st, err := sb.FillPool(ctx, "sandbox.cache")
	if err != nil || st.Ready != 10 {
		t.Fatalf("fill: %+v, %v", st, err)
	}
	const callers = 50
	type got struct {
		key, member, container, password string
		fromPool                         bool
	}
	results := make([]got, callers)
	var wg sync.WaitGroup
	errs := make([]error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key := fmt.Sprintf("c%02d", i)
			s, err := sb.Request(ctx, "sandbox.cache", sandboxer.RequestOptions{Key: key})
			if err != nil {
				errs[i] = err
				return
			}
			rec, err := sb.Store().Get(ctx, s.Address)
			if err != nil || rec == nil {
				errs[i] = fmt.Errorf("record of %s: %v", s.Address, err)
				return
			}
			results[i] = got{key: key, member: rec.LabelAddress, container: rec.Resources.Containers["redis"],
				password: s.Env["SANDBOXER_REDIS_PASSWORD"], fromPool: s.FromPool}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	fromPool, containers, passwords := 0, map[string]string{}, map[string]string{}
	members := map[string]bool{}
	for _, m := range st.Members {
		members[m] = true
	}
	for _, r := range results {
		if r.fromPool {
			fromPool++
			if !members[r.member] {
				t.Errorf("%s claimed %q, not a member of the filled pool", r.key, r.member)
			}
		}
		if prev, dup := containers[r.container]; dup {
			t.Errorf("container %s handed to %s and %s", r.container, prev, r.key)
		}
		containers[r.container] = r.key
		if prev, dup := passwords[r.password]; dup {
			t.Errorf("one password handed to %s and %s", prev, r.key)
		}
		passwords[r.password] = r.key
	}
	// Without a keeper nothing refills: exactly the 10 members are
	// claimed, the other 40 provision cold.
	if fromPool != 10 {
		t.Errorf("%d of %d served from a pool of 10, want exactly 10", fromPool, callers)
	}
	if st, _ := sb.PoolStatus(ctx, "sandbox.cache"); st.Ready != 0 {
		t.Errorf("pool still has %d ready after 50 claims", st.Ready)
	}

	// Reap: claimed instances stay (their labels name pool addresses with
	// no record), nothing is an orphan.
	rep, err := sb.Reap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Orphans) != 0 || len(rep.Expired) != 0 {
		t.Fatalf("reap removed %d orphans and %d expired; want none", len(rep.Orphans), len(rep.Expired))
	}
	for _, r := range results {
		if !containerExists(t, r.container) {
			t.Fatalf("reap removed %s's container", r.key)
		}
	}

	// A member whose record is lost is swept; one drained is gone.
	st, err = sb.FillPool(ctx, "sandbox.cache")
	if err != nil || st.Ready != 10 {
		t.Fatalf("refill: %+v, %v", st, err)
	}
	lost, _ := sb.Store().Get(ctx, st.Members[0])
	if err := sb.Store().Delete(ctx, lost.Address); err != nil {
		t.Fatal(err)
	}
	rep, err = sb.Reap(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Orphans) != 1 || containerExists(t, lost.Resources.Containers["redis"]) {
		t.Errorf("reap removed %d orphans; the lost member's container exists: %v", len(rep.Orphans), containerExists(t, lost.Resources.Containers["redis"]))
	}
	st, err = sb.DrainPool(ctx, "sandbox.cache")
	if err != nil || st.Drained != 9 || st.Ready != 0 {
		t.Fatalf("drain: %+v, %v", st, err)
	}
	lin := poolLineage(sb)
	if n := containersLabelled(t, "dev.sandboxer.lineage="+lin); n != callers {
		t.Errorf("%d containers of the lineage after the drain, want the %d claimed and cold ones", n, callers)
	}
	for _, r := range results {
		if !containerExists(t, r.container) {
			t.Errorf("drain removed %s's container", r.key)
		}
	}
}

// A bad pool size is a located configuration error, and nothing is made.
func TestPoolBadSizeLeavesNothing(t *testing.T) {
	for _, size := range []string{"0", "257"} {
		dir := t.TempDir()
		src := strings.Replace(poolRedisFixture, "size = 10", "size = "+size, 1)
		if err := os.WriteFile(filepath.Join(dir, "main.sbx.hcl"), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := sandboxer.Open(context.Background(), dir, sandboxer.Options{})
		var ce *sandboxer.ConfigError
		if !errors.As(err, &ce) {
			t.Fatalf("size %s: %v, want a ConfigError", size, err)
		}
		if !strings.Contains(err.Error(), "main.sbx.hcl:15,12") || !strings.Contains(err.Error(), "from 1 to 256") {
			t.Errorf("size %s: %v, want main.sbx.hcl:15,12 and the bounds", size, err)
		}
		if _, err := os.Stat(filepath.Join(dir, ".sandboxer")); !os.IsNotExist(err) {
			t.Errorf("size %s: a .sandboxer directory was made", size)
		}
	}
}
