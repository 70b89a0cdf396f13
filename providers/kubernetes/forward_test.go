package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"k8s.io/klog/v2"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/internal/plugin"
	"github.com/sandboxer/sandboxer/state"
)

// The test binary is also the runtime's program for the namespace test:
// run with servePluginEnv set, it serves this package's provider on its
// standard streams as sandboxer-kubernetes does (kubeplugin.Main: the same
// plugin.Serve, the same New).
const servePluginEnv = "SANDBOXER_KUBE_TEST_SERVE_PLUGIN"

func TestMain(m *testing.M) {
	if os.Getenv(servePluginEnv) == "1" {
		klog.SetOutput(io.Discard)
		klog.LogToStderr(false)
		signal.Ignore(syscall.SIGPIPE)
		err := plugin.Serve(os.Stdin, os.Stdout, func(ctx context.Context, s plugin.Settings) (apply.Provider, error) {
			p, err := New(ctx, s.Provider, config.NewCatalog(s.Catalog))
			if err != nil {
				return nil, err
			}
			p.CADir = s.CADir
			return p, nil
		})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// dialFunc is how a client reaches a server (from inside the namespace).
type dialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

func pgConnect(ctx context.Context, dial dialFunc, c state.Credentials, host string, port int) (*pgx.Conn, error) {
	cfg, err := pgx.ParseConfig(fmt.Sprintf("postgres://%s@%s/%s?sslmode=disable&connect_timeout=5",
		c.User, net.JoinHostPort(host, strconv.Itoa(port)), c.Database))
	if err != nil {
		return nil, err
	}
	cfg.Password = c.Password.Reveal()
	cfg.DialFunc = pgconnDial(dial)
	return pgx.ConnectConfig(ctx, cfg)
}

func pgconnDial(dial dialFunc) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) { return dial(ctx, network, addr) }
}

func pgSelect1(ctx context.Context, dial dialFunc, c state.Credentials, host string, port int) error {
	conn, err := pgConnect(ctx, dial, c, host, port)
	if err != nil {
		return err
	}
	defer conn.Close(context.Background())
	var one int
	if err := conn.QueryRow(ctx, "SELECT 1").Scan(&one); err != nil || one != 1 {
		return fmt.Errorf("SELECT 1: %d, %v", one, err)
	}
	return nil
}

func redisClient(dial dialFunc, c state.Credentials, host string, port int) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: net.JoinHostPort(host, strconv.Itoa(port)), Username: c.User,
		Password: c.Password.Reveal(), Dialer: dial, PoolSize: 1, MaxRetries: -1, DialTimeout: 5 * time.Second})
}

// TestPortForwardFromOutsideTheCluster runs the runtime's program in a
// network namespace that routes to the API server but not to the pods,
// with endpoint = "auto": the pod IP answers nothing there, so the
// program forwards; pgx and go-redis connect through the forward; a cut
// of every connection to the API server heals within a second; 200
// connections share one forward; a superset replacement is followed on
// the same ports; and the forward ends with the sandbox.
func TestPortForwardFromOutsideTheCluster(t *testing.T) {
	kc := requireRootAndCluster(t)
	p, _ := newTestProvider(t)
	lineage := newLineage(t, p)
	feats := config.FeatureSet{"postgres": {}, "redis": {}}
	rec := createInstance(t, p, apply.CreateRequest{Address: "sandbox.fwd", Lineage: lineage, Generation: 1, Features: feats})
	pg, rd := rec.Credentials["postgres"], rec.Credentials["redis"]

	ns := newTestNetns(t, kc)
	relay, nsKubeconfig := ns.relay(t)
	ctx := ctxFor(t, 5*time.Minute)

	// From the namespace the pod IP does not connect.
	dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	if c, err := ns.dial(dctx, "tcp", net.JoinHostPort(pg.Host, strconv.Itoa(pg.Port))); err == nil {
		c.Close()
		t.Fatalf("the pod IP %s answered from the namespace: the test proves nothing", pg.Host)
	} else {
		t.Logf("pod IP from the namespace: %v (as wanted)", err)
	}
	cancel()
	if err := pgSelect1(ctx, ns.dial, pg, pg.Host, pg.Port); err == nil {
		t.Fatal("pgx reached the pod IP from the namespace")
	}

	// The runtime's program in the namespace, endpoint = "auto".
	pc := testConfig(nsKubeconfig)
	pc.Endpoint = config.EndpointAuto
	sctx, scancel := context.WithTimeout(ctx, time.Minute)
	client, err := plugin.Start(sctx, ns.wrapper(t), plugin.Settings{Provider: pc, Catalog: config.DefaultCatalog().Specs(), CADir: t.TempDir()})
	scancel()
	if err != nil {
		t.Fatalf("start the runtime's program in the namespace: %v", err)
	}
	t.Cleanup(func() { client.Close() })
	start := time.Now()
	eps, err := client.Forward(ctx, rec)
	if err != nil {
		t.Fatalf("Forward: %v", err)
	}
	t.Logf("Forward (auto decided, listeners up) in %v: %v", time.Since(start), eps)
	pgEP, rdEP := eps["postgres"], eps["redis"]
	if pgEP.Host != "127.0.0.1" || pgEP.Port == 0 || rdEP.Port == 0 {
		t.Fatalf("endpoints %v: want a local port per service (auto must forward where the pod IP does not answer)", eps)
	}

	// pgx and go-redis through the forward.
	if err := pgSelect1(ctx, ns.dial, pg, pgEP.Host, pgEP.Port); err != nil {
		t.Fatalf("pgx through the forward: %v", err)
	}
	held, err := pgConnect(ctx, ns.dial, pg, pgEP.Host, pgEP.Port)
	if err != nil {
		t.Fatalf("pgx through the forward: %v", err)
	}
	defer held.Close(context.Background())
	rc := redisClient(ns.dial, rd, rdEP.Host, rdEP.Port)
	defer rc.Close()
	if err := rc.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatalf("go-redis through the forward: %v", err)
	}

	// Every connection to the API server cut mid-session: a new
	// connection works within a second.
	cut := relay.cut()
	cutAt := time.Now()
	if cut == 0 {
		t.Fatal("the relay had no connection to cut: the forward does not go through it")
	}
	var healed time.Duration
	for {
		qctx, qcancel := context.WithTimeout(ctx, 2*time.Second)
		a0 := time.Now()
		err := pgSelect1(qctx, ns.dial, pg, pgEP.Host, pgEP.Port)
		qcancel()
		if err == nil {
			healed = time.Since(cutAt)
			break
		}
		t.Logf("after the cut, at %v: a connection failed in %v: %v", a0.Sub(cutAt), time.Since(a0), err)
		if time.Since(cutAt) > 5*time.Second {
			t.Fatalf("no new connection through the forward 5 s after the cut: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("cut %d connections to the API server; a new pgx connection worked %v later", cut, healed)
	if healed > time.Second {
		t.Errorf("a new connection took %v after the cut, want ≤ 1 s", healed)
	}
	if err := held.Ping(ctx); err == nil {
		t.Errorf("the connection on the cut stream still answers: the cut did not reach the forward")
	}
	if v, err := rc.Get(ctx, "k").Result(); err != nil || v != "v" {
		// go-redis dials again by itself (its pool drops the dead one).
		if v, err = rc.Get(ctx, "k").Result(); err != nil || v != "v" {
			t.Errorf("go-redis after the cut: %q, %v", v, err)
		}
	}

	// 200 connections at once through one forward.
	const many = 200
	var wg, pinged sync.WaitGroup
	errs := make(chan error, many)
	pinged.Add(many)
	release := make(chan struct{})
	manyStart := time.Now()
	for i := 0; i < many; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := redisClient(ns.dial, rd, rdEP.Host, rdEP.Port)
			defer c.Close()
			err := c.Ping(ctx).Err()
			pinged.Done()
			if err != nil {
				errs <- err
				return
			}
			<-release // all open at once
			if err := c.Incr(ctx, "many").Err(); err != nil {
				errs <- err
			}
		}()
	}
	pinged.Wait()
	close(release)
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if failed == 0 {
			t.Errorf("one of %d connections: %v", many, err)
		}
		failed++
	}
	if n, err := rc.Get(ctx, "many").Int(); err != nil || n != many {
		t.Errorf("INCR by %d connections held open together: %d (%v), %d failed", many, n, err, failed)
	}
	t.Logf("%d connections held open together through one forward in %v", many, time.Since(manyStart))

	// A superset replaces the sandbox (new before old): the forward
	// follows the new pod on the same ports.
	feats2 := config.FeatureSet{"postgres": {"pg_trgm"}, "redis": {}}
	rec2 := createInstance(t, p, apply.CreateRequest{Address: "sandbox.fwd", Lineage: lineage, Generation: 2, Features: feats2})
	dctx, cancel = context.WithTimeout(ctx, time.Minute)
	if err := p.Delete(dctx, rec); err != nil {
		t.Fatalf("delete the replaced sandbox: %v", err)
	}
	cancel()
	pg2 := rec2.Credentials["postgres"]
	followed := time.Now()
	for {
		qctx, qcancel := context.WithTimeout(ctx, 2*time.Second)
		err := pgSelect1(qctx, ns.dial, pg2, pgEP.Host, pgEP.Port)
		qcancel()
		if err == nil {
			break
		}
		if time.Since(followed) > 15*time.Second {
			t.Fatalf("the forward did not follow the replacement within 15 s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the forward followed the replacement %v after the old pod was deleted", time.Since(followed))
	eps2, err := client.Forward(ctx, rec2)
	if err != nil {
		t.Fatalf("Forward of the replacement: %v", err)
	}
	if eps2["postgres"] != pgEP || eps2["redis"] != rdEP {
		t.Errorf("the replacement's endpoints %v, want the same ports %v %v", eps2, pgEP, rdEP)
	}

	// The forward ends with the sandbox.
	dctx, cancel = context.WithTimeout(ctx, time.Minute)
	if err := p.Delete(dctx, rec2); err != nil {
		t.Fatalf("delete: %v", err)
	}
	cancel()
	ended := time.Now()
	for {
		c, err := ns.dial(ctx, "tcp", net.JoinHostPort(pgEP.Host, strconv.Itoa(pgEP.Port)))
		if err != nil {
			if !errors.Is(err, syscall.ECONNREFUSED) {
				t.Errorf("after the sandbox ended, connecting to its forwarded port: %v, want refused", err)
			}
			break
		}
		c.Close()
		if time.Since(ended) > 15*time.Second {
			t.Fatal("the forward's listener is still open 15 s after the sandbox was deleted")
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("the forward's listeners closed %v after the sandbox was deleted", time.Since(ended))
}
