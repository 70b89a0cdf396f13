package docker

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	redissvc "github.com/sandboxer/sandboxer/services/redis"

	pgsvc "github.com/sandboxer/sandboxer/services/postgres"

	"github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/network"
	"github.com/docker/docker/pkg/stdcopy"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/services"
	"github.com/sandboxer/sandboxer/state"
)

// loadedReadyTimeout is how long these tests let a sandbox become ready:
// they check reach, not start-up speed, and the shared engine is often
// busy with other test runs.
const loadedReadyTimeout = 3 * time.Minute

// newUserNetwork creates a user network as a user would (docker network
// create), labelled for this test and removed when it ends.
func newUserNetwork(t *testing.T, p *Provider) string {
	t.Helper()
	b := make([]byte, 4)
	rand.Read(b)
	name := "sbx-test-agents-" + hex.EncodeToString(b)
	ctx := context.Background()
	if _, err := p.cli.NetworkCreate(ctx, name, network.CreateOptions{Driver: "bridge",
		Labels: map[string]string{"sandboxer.test": "reach"}}); err != nil {
		t.Fatalf("create user network: %v", err)
	}
	t.Cleanup(func() {
		if err := p.cli.NetworkRemove(context.Background(), name); err != nil {
			t.Errorf("remove user network %s: %v", name, err)
		}
	})
	return name
}

// runClient runs a one-off client container from image on netName with
// env, and returns its exit code and output. The container is removed.
func runClient(t *testing.T, p *Provider, image, netName string, env []string, cmd ...string) (int64, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	resp, err := p.cli.ContainerCreate(ctx,
		&container.Config{Image: image, Env: env, Entrypoint: []string{}, Cmd: cmd,
			Labels: map[string]string{"sandboxer.test": "reach"}},
		&container.HostConfig{NetworkMode: container.NetworkMode(netName), SecurityOpt: []string{"no-new-privileges"}},
		nil, nil, "")
	if err != nil {
		t.Fatalf("create client container: %v", err)
	}
	defer p.cli.ContainerRemove(context.Background(), resp.ID, container.RemoveOptions{Force: true})
	wait, errc := p.cli.ContainerWait(ctx, resp.ID, container.WaitConditionNextExit)
	if err := p.cli.ContainerStart(ctx, resp.ID, container.StartOptions{}); err != nil {
		t.Fatalf("start client container: %v", err)
	}
	var code int64
	select {
	case w := <-wait:
		code = w.StatusCode
	case err := <-errc:
		t.Fatalf("wait for client container: %v", err)
	}
	logs, err := p.cli.ContainerLogs(ctx, resp.ID, container.LogsOptions{ShowStdout: true, ShowStderr: true})
	if err != nil {
		t.Fatalf("client logs: %v", err)
	}
	defer logs.Close()
	var out bytes.Buffer
	stdcopy.StdCopy(&out, &out, logs)
	return code, out.String()
}

// A client container on a user network reaches both services with the
// handed-out in-network URLs (psql and redis-cli from the local images);
// one on another network cannot resolve them.
func TestUserNetworkEndpoint(t *testing.T) {
	t.Parallel()
	p, secrets := newTestProvider(t)
	p.ReadyTimeout = loadedReadyTimeout
	lineage := newLineage(t, p)
	agents := newUserNetwork(t, p)
	other := newUserNetwork(t, p)
	ctx := context.Background()
	req := apply.CreateRequest{
		Address: `sandbox.agent["net"]`, Lineage: lineage, Generation: 1,
		Features: config.FeatureSet{"postgres": {}, "redis": {}},
		Networks: []string{agents},
		Publish:  config.DefaultPublish(),
	}
	created, err := p.Create(ctx, req)
	secrets.assertClean(t, err)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	rec := recordFor(req, created)
	defer p.Delete(ctx, rec)
	pg, rd := created.Credentials["postgres"], created.Credentials["redis"]
	for svc, c := range created.Credentials {
		want := containerName(lineage, req.Address, 1, svc)
		if c.NetworkHost != want || c.NetworkPort != services.Port(svc) || c.Host != "127.0.0.1" || c.CA != "" {
			t.Errorf("%s: network endpoint %s:%d, host %s, CA %t; want %s:%d on 127.0.0.1 without CA",
				svc, c.NetworkHost, c.NetworkPort, c.Host, c.CA != "", want, services.Port(svc))
		}
	}
	if !strings.HasPrefix(pg.NetworkURL("postgres"), "postgres://app:") || !strings.Contains(pg.NetworkURL("postgres"), "@"+pg.NetworkHost+":5432/app?sslmode=disable") {
		t.Errorf("postgres network URL has the wrong shape")
	}

	code, out := runClient(t, p, testPostgresImage(), agents, []string{"URL=" + pg.NetworkURL("postgres")},
		"sh", "-c", `psql "$URL" -tAc "SELECT current_user || ' ' || current_database()"`)
	if code != 0 || strings.TrimSpace(out) != "app app" {
		t.Errorf("psql on %s: exit %d, output %q", agents, code, out)
	}
	code, out = runClient(t, p, testRedisImage(), agents, []string{"URL=" + rd.NetworkURL("redis")},
		"sh", "-c", `redis-cli --no-auth-warning -u "$URL" SET k v && redis-cli --no-auth-warning -u "$URL" GET k`)
	if code != 0 || strings.Fields(out)[len(strings.Fields(out))-1] != "v" {
		t.Errorf("redis-cli on %s: exit %d, output %q", agents, code, out)
	}
	code, out = runClient(t, p, testPostgresImage(), other, []string{"URL=" + pg.NetworkURL("postgres")},
		"sh", "-c", `psql "$URL" -tAc "SELECT 1"`)
	if code == 0 {
		t.Errorf("a container on another network reached the sandbox: %q", out)
	}
	for _, s := range []string{pg.Password.Reveal(), rd.Password.Reveal()} {
		if strings.Contains(out, s) {
			t.Fatal("client output holds a password")
		}
	}
	if err := p.Delete(ctx, rec); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	assertNothingLabelled(t, p, lineage)
}

// An unknown user network is found before anything is created.
func TestMissingNetworks(t *testing.T) {
	t.Parallel()
	p, _ := newTestProvider(t)
	agents := newUserNetwork(t, p)
	missing, err := p.MissingNetworks(context.Background(), []string{agents, "sbx-test-no-such-network"})
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) != 1 || missing[0] != "sbx-test-no-such-network" {
		t.Errorf("missing = %v", missing)
	}
}

// hostAddress returns a non-loopback IPv4 address of this machine that
// is not a Docker bridge's.
func hostAddress(t *testing.T) string {
	t.Helper()
	ifaces, err := net.Interfaces()
	if err != nil {
		t.Fatal(err)
	}
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 ||
			strings.HasPrefix(ifc.Name, "docker") || strings.HasPrefix(ifc.Name, "br-") || strings.HasPrefix(ifc.Name, "veth") {
			continue
		}
		addrs, _ := ifc.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil && !ipn.IP.IsLoopback() {
				return ipn.IP.String()
			}
		}
	}
	t.Fatal("this machine has no non-loopback IPv4 address to publish on")
	return ""
}

// A TLS sandbox published on a non-loopback address of this machine is
// reached with the handed-out URLs and CA, verify-full, through pgx and
// go-redis; plain connections are refused; clients on its user network
// verify the same certificate under the container's name; Delete removes
// the CA file.
func TestPublishWithTLS(t *testing.T) {
	t.Parallel()
	p, secrets := newTestProvider(t)
	p.ReadyTimeout = loadedReadyTimeout
	p.ProbeTimeout = 30 * time.Second // a TLS login on a busy engine
	p.CADir = t.TempDir()
	lineage := newLineage(t, p)
	ip := hostAddress(t)
	agents := newUserNetwork(t, p)
	ctx := context.Background()
	req := apply.CreateRequest{
		Address: "sandbox.remote", Lineage: lineage, Generation: 1,
		Features: config.FeatureSet{"postgres": {}, "redis": {}},
		Networks: []string{agents},
		Publish:  config.Publish{Address: ip, AdvertiseHost: ip, TLS: true},
	}
	created, err := p.Create(ctx, req)
	secrets.assertClean(t, err)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	rec := recordFor(req, created)
	defer p.Delete(ctx, rec)
	pg, rd := created.Credentials["postgres"], created.Credentials["redis"]

	if pg.Host != ip || rd.Host != ip || pg.CA == "" || pg.CAFile == "" || pg.CAFile != rd.CAFile {
		t.Fatalf("credentials: postgres %s (CA file %q), redis %s (CA file %q)", pg.Host, pg.CAFile, rd.Host, rd.CAFile)
	}
	fi, err := os.Stat(pg.CAFile)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("CA file: %v, mode %v", err, fi.Mode())
	}
	ci, err := p.cli.ContainerInspect(ctx, created.Resources.Containers["postgres"])
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range ci.NetworkSettings.Ports[postgresPort] {
		if b.HostIP != ip {
			t.Errorf("postgres published on %s, want %s", b.HostIP, ip)
		}
	}

	t.Run("pgx verify-full with the handed-out URL", func(t *testing.T) {
		url := pg.URL("postgres")
		if !strings.Contains(url, "sslmode=verify-full") || !strings.Contains(url, "sslrootcert="+pg.CAFile) {
			t.Fatalf("URL does not ask for verify-full against the CA file")
		}
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatalf("connect: %v", scrubbed(err, pg))
		}
		defer conn.Close(ctx)
		var ssl bool
		if err := conn.QueryRow(ctx, "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()").Scan(&ssl); err != nil || !ssl {
			t.Errorf("connection is not TLS (ssl=%v, err=%v)", ssl, err)
		}
	})
	t.Run("postgres refuses plain TCP", func(t *testing.T) {
		if err := pgsvc.Ping(ctx, pg.Host, pg.Port, pg.User, pg.Password, pg.Database, nil); err == nil {
			t.Error("a plain connection logged in")
		}
	})
	t.Run("go-redis rediss with the handed-out CA", func(t *testing.T) {
		opts, err := redis.ParseURL(rd.URL("redis"))
		if err != nil {
			t.Fatalf("parse URL: %v", scrubbed(err, rd))
		}
		if opts.TLSConfig == nil {
			t.Fatal("rediss URL gave no TLS config")
		}
		pem, err := os.ReadFile(rd.CAFile)
		if err != nil {
			t.Fatal(err)
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM(pem)
		opts.TLSConfig.RootCAs = pool
		rdb := redis.NewClient(opts)
		defer rdb.Close()
		if err := rdb.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatalf("SET: %v", scrubbed(err, rd))
		}
		if v, err := rdb.Get(ctx, "k").Result(); err != nil || v != "v" {
			t.Errorf("GET = %q, %v", v, err)
		}
	})
	t.Run("a client that does not trust the CA is refused", func(t *testing.T) {
		bad := &tls.Config{ServerName: ip, RootCAs: x509.NewCertPool()}
		if err := redissvc.Ping(ctx, rd.Host, rd.Port, rd.User, rd.Password, bad); err == nil {
			t.Error("TLS handshake succeeded without the CA")
		}
		if err := redissvc.Ping(ctx, rd.Host, rd.Port, rd.User, rd.Password, nil); err == nil {
			t.Error("plain redis answered on the TLS port")
		}
	})
	t.Run("in-network clients verify the container name", func(t *testing.T) {
		// The CA reaches the client container as PEM in its environment;
		// the URL's sslrootcert names the file on this host, so it is
		// pointed at the client's copy.
		code, out := runClient(t, p, testPostgresImage(), agents, []string{"URL=" + pg.NetworkURL("postgres"), "CA=" + pg.CA},
			"sh", "-c", `printf '%s' "$CA" > /tmp/ca.pem && psql "$(printf '%s' "$URL" | sed 's|sslrootcert=[^&]*|sslrootcert=/tmp/ca.pem|')" -tAc "SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()"`)
		if code != 0 || strings.TrimSpace(out) != "t" {
			t.Errorf("psql verify-full on %s: exit %d, output %q", agents, code, out)
		}
		code, out = runClient(t, p, testRedisImage(), agents, []string{"URL=" + rd.NetworkURL("redis"), "CA=" + rd.CA},
			"sh", "-c", `printf '%s' "$CA" > /tmp/ca.pem && redis-cli --no-auth-warning --tls --cacert /tmp/ca.pem -u "$URL" PING`)
		if code != 0 || strings.TrimSpace(out) != "PONG" {
			t.Errorf("redis-cli --tls on %s: exit %d, output %q", agents, code, out)
		}
		if strings.Contains(out, rd.Password.Reveal()) {
			t.Fatal("client output holds a password")
		}
	})
	t.Run("probe", func(t *testing.T) {
		if err := p.Probe(ctx, rec); err != nil {
			t.Errorf("Probe: %v", err)
		}
	})
	if err := p.Delete(ctx, rec); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := os.Stat(pg.CAFile); !os.IsNotExist(err) {
		t.Errorf("CA file still there after Delete: %v", err)
	}
	assertNothingLabelled(t, p, lineage)
}

// scrubbed hides c's password in an error before a test prints it.
func scrubbed(err error, c state.Credentials) string {
	return strings.ReplaceAll(err.Error(), c.Password.Reveal(), "(sensitive)")
}
