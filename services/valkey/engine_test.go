package valkey

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/sandboxer/sandboxer/internal/certs"
	"github.com/sandboxer/sandboxer/services/internal/enginetest"
	"github.com/sandboxer/sandboxer/services/redis"
	"github.com/sandboxer/sandboxer/state"
)

// Service has the first methods of services.Service; the rest (Start,
// Ready, Prober, Rotate, Data, SnapshotFormat, NamesDatabase) come with
// its wiring into the catalogue (docs/services-mysql-valkey.md).
var _ interface {
	Name() string
	Port() int
	Account() string
	StartRank() int
} = Service{}

// testImage is the local image images/build.sh valkey makes.
const testImage = "sandboxer.local/valkey:8"

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

type instance struct {
	ctr   *enginetest.Container
	creds state.Credentials
}

// startInstance starts the image as a runtime would: the ACL file in a
// mounted secret directory, ServerArgs on the command line.
func startInstance(ctx context.Context, t *testing.T) *instance {
	t.Helper()
	image := enginetest.Image(t, testImage, "images/build.sh valkey")
	c := state.Credentials{
		User: "app_" + randomHex(4), Password: state.Secret("pw-" + randomHex(10)),
		AdminUser: "sbx_admin", AdminPassword: state.Secret("admin-" + randomHex(10)),
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil { // a runtime chowns to Account() instead
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ACLFileName), ACLFile(c), 0o644); err != nil {
		t.Fatal(err)
	}
	ctr := enginetest.Start(ctx, t, enginetest.Spec{
		Image:  image,
		Mounts: map[string]string{dir: "/run/sandboxer"},
		Port:   Port,
		Args:   ServerArgs("/run/sandboxer/" + ACLFileName),
	})
	c.Host, c.Port = "127.0.0.1", ctr.HostPort(ctx, Port)
	d := ctr.WaitFor(ctx, func(ctx context.Context) error { return Service{}.Ping(ctx, c, nil) })
	t.Logf("ready %v after docker run", d.Round(time.Millisecond))
	return &instance{ctr: ctr, creds: c}
}

func (in *instance) client(t *testing.T, user string, password state.Secret) *goredis.Client {
	t.Helper()
	rdb := redis.Client(in.creds.Host, in.creds.Port, user, password, nil)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// cli runs valkey-cli in the container against the server.
func (in *instance) cli(ctx context.Context, user string, password state.Secret, args ...string) (string, error) {
	cmd := append([]string{"valkey-cli", "--no-auth-warning"}, args...)
	if user != "" {
		cmd = append([]string{"valkey-cli", "--no-auth-warning", "--user", user, "--pass", password.Reveal()}, args...)
	}
	var out bytes.Buffer
	err := in.ctr.Exec(ctx, "valkey", cmd, &out)
	return strings.TrimSpace(out.String()), err
}

func TestInstance(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	in := startInstance(ctx, t)
	c := in.creds
	app := in.client(t, c.User, c.Password)
	admin := in.client(t, c.AdminUser, c.AdminPassword)

	t.Run("app user logs in", func(t *testing.T) {
		if err := app.Set(ctx, "greeting", "hello", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if who, err := app.Do(ctx, "ACL", "WHOAMI").Text(); err != nil || who != c.User {
			t.Errorf("ACL WHOAMI: %q, %v; want %s", who, err, c.User)
		}
		out, err := in.cli(ctx, c.User, c.Password, "GET", "greeting")
		if err != nil || out != "hello" {
			t.Errorf("valkey-cli GET as the app user: %q, %v", out, err)
		}
		out, _ = in.cli(ctx, "", "", "PING")
		if !strings.Contains(out, "NOAUTH") {
			t.Errorf("valkey-cli PING without a user: %q, want NOAUTH (the default user is off)", out)
		}
		out, _ = in.cli(ctx, "default", "", "PING")
		if out == "PONG" {
			t.Error("the default user logs in")
		}
	})

	t.Run("admin credentials are not the app's", func(t *testing.T) {
		if c.User == c.AdminUser || c.Password == c.AdminPassword {
			t.Fatal("the app got the admin's name or password")
		}
		if err := redis.Ping(ctx, c.Host, c.Port, c.AdminUser, c.Password, nil); err == nil {
			t.Error("the admin logs in with the app's password")
		}
		if err := admin.Ping(ctx).Err(); err != nil {
			t.Errorf("admin: %v", err)
		}
	})

	t.Run("escape routes are refused", func(t *testing.T) {
		refused := [][]any{
			{"CONFIG", "SET", "dir", "/tmp"},
			{"CONFIG", "GET", "*"},
			{"MODULE", "LOAD", "/usr/lib/x86_64-linux-gnu/libc.so.6"},
			{"MODULE", "LIST"},
			{"DEBUG", "SLEEP", "0"},
			{"DEBUG", "OBJECT", "greeting"},
			{"ACL", "SETUSER", c.User, "+@all"},
			{"ACL", "LIST"},
			{"SHUTDOWN", "NOSAVE"},
			{"REPLICAOF", "127.0.0.1", "1"},
			{"CLIENT", "KILL", "TYPE", "normal"},
			{"MONITOR"},
			{"BGSAVE"},
			{"RESTORE", "k", "0", "x"},
			{"EVAL", "return server.call('CONFIG', 'SET', 'dir', '/tmp')", "0"},
		}
		for _, cmd := range refused {
			// NOPERM from the ACL, or "not allowed" from the server-wide
			// switches (MODULE, DEBUG) and the script sandbox, which
			// answer first.
			err := app.Do(ctx, cmd...).Err()
			if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") && !strings.Contains(err.Error(), "not allowed") {
				t.Errorf("%v as the app user: %v, want refused", cmd, err)
			}
			// The ACL alone refuses it too: the second wall.
			args := append([]any{"ACL", "DRYRUN", c.User}, cmd...)
			if cmd[0] == "EVAL" {
				continue // the script itself may run; what it calls is refused above
			}
			if res, err := admin.Do(ctx, args...).Text(); err != nil || !strings.Contains(res, "no permissions") {
				t.Errorf("ACL DRYRUN %v: %q, %v; want the app user's ACL to refuse it", cmd, res, err)
			}
		}
		out, _ := in.cli(ctx, c.User, c.Password, "CONFIG", "SET", "dir", "/tmp")
		if !strings.Contains(out, "NOPERM") {
			t.Errorf("valkey-cli CONFIG SET as the app user: %q, want NOPERM", out)
		}
		// Not even the admin loads a module or runs DEBUG: both commands
		// are off in the server.
		for _, cmd := range [][]any{{"MODULE", "LOAD", "/usr/lib/x86_64-linux-gnu/libc.so.6"}, {"DEBUG", "SLEEP", "0"}} {
			if err := admin.Do(ctx, cmd...).Err(); err == nil {
				t.Errorf("%v as the admin: allowed", cmd)
			}
		}
		if err := admin.Ping(ctx).Err(); err != nil {
			t.Fatalf("server gone after the escapes: %v", err)
		}
	})

	t.Run("features", func(t *testing.T) {
		got, err := LoadedFeatures(ctx, admin)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 0 {
			t.Errorf("the local image loaded modules %v; Debian packages none", got)
		}
	})

	t.Run("dump and load", func(t *testing.T) {
		if err := app.Set(ctx, "s", "v1", time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
		if err := app.HSet(ctx, "h", "f", "x").Err(); err != nil {
			t.Fatal(err)
		}
		db3 := redis.Client(c.Host, c.Port, c.User, c.Password, nil)
		defer db3.Close()
		if err := db3.Do(ctx, "SELECT", 3).Err(); err != nil {
			t.Fatal(err)
		}
		if err := db3.RPush(ctx, "l", "a", "b").Err(); err != nil {
			t.Fatal(err)
		}
		if n, err := db3.DBSize(ctx).Result(); err != nil || n != 1 {
			t.Fatalf("db 3 before the dump: %d keys, %v", n, err)
		}
		path := filepath.Join(t.TempDir(), "dump.jsonl")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := Dump(ctx, c, f); err != nil {
			t.Fatal(err)
		}
		f.Close()
		if dump, _ := os.ReadFile(path); !bytes.Contains(dump, []byte(`"db":3`)) {
			t.Errorf("the dump lacks database 3:\n%s", dump)
		}
		if err := app.FlushAll(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if err := app.Set(ctx, "stray", "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := Load(ctx, c, path); err != nil {
			t.Fatal(err)
		}
		if v, err := app.Get(ctx, "s").Result(); err != nil || v != "v1" {
			t.Errorf("s after load: %q, %v", v, err)
		}
		if ttl, err := app.TTL(ctx, "s").Result(); err != nil || ttl <= 0 || ttl > time.Hour {
			t.Errorf("s's TTL after load: %v, %v", ttl, err)
		}
		if v, err := app.HGet(ctx, "h", "f").Result(); err != nil || v != "x" {
			t.Errorf("h after load: %q, %v", v, err)
		}
		if n, err := app.Exists(ctx, "stray").Result(); err != nil || n != 0 {
			t.Errorf("a key made after the dump survived the load: %d, %v", n, err)
		}
		if v, err := db3.LRange(ctx, "l", 0, -1).Result(); err != nil || strings.Join(v, ",") != "a,b" {
			t.Errorf("db 3's list after load: %v, %v", v, err)
		}
	})

	t.Run("idle memory", func(t *testing.T) {
		time.Sleep(2 * time.Second)
		mib := in.ctr.MemoryMiB(ctx)
		t.Logf("idle memory (docker stats): %.1f MiB", mib)
		if mib > 64 {
			t.Errorf("idle memory %.1f MiB, more than 64 MiB", mib)
		}
	})
}

// The image's own contract (valkey/valkey's): options as the command
// start valkey-server with them, as user valkey in /data.
func TestImageContract(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	image := enginetest.Image(t, testImage, "images/build.sh valkey")
	pw := state.Secret("pw-" + randomHex(8))
	ctr := enginetest.Start(ctx, t, enginetest.Spec{Image: image, Port: Port, Args: []string{"--requirepass", pw.Reveal()}})
	port := ctr.HostPort(ctx, Port)
	ctr.WaitFor(ctx, func(ctx context.Context) error { return redis.Ping(ctx, "127.0.0.1", port, "default", pw, nil) })
	for cmd, want := range map[string]string{"stat -c %U /proc/1": "valkey", "readlink /proc/1/cwd": "/data", "cat /proc/1/comm": "valkey-server"} {
		var out bytes.Buffer
		// As valkey: /proc/1/cwd is readable by the process's own user.
		if err := ctr.Exec(ctx, "valkey", strings.Fields(cmd), &out); err != nil || strings.TrimSpace(out.String()) != want {
			t.Errorf("%s: %q (%v), want %q", cmd, out.String(), err, want)
		}
	}
}

// With TLSArgs the server takes TLS logins verified against the
// instance's own CA and refuses plain ones.
func TestTLS(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	image := enginetest.Image(t, testImage, "images/build.sh valkey")
	m, err := certs.New("valkey", []string{"127.0.0.1", "localhost"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c := state.Credentials{
		User: "app_" + randomHex(4), Password: state.Secret("pw-" + randomHex(10)),
		AdminUser: "sbx_admin", AdminPassword: state.Secret("admin-" + randomHex(10)),
		CA: string(m.CAPEM),
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{ACLFileName: ACLFile(c), "tls.crt": m.CertPEM, "tls.key": m.KeyPEM, "ca.crt": m.CAPEM}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	args := append(ServerArgs("/run/sandboxer/"+ACLFileName), TLSArgs("/run/sandboxer/tls.crt", "/run/sandboxer/tls.key", "/run/sandboxer/ca.crt")...)
	ctr := enginetest.Start(ctx, t, enginetest.Spec{Image: image, Mounts: map[string]string{dir: "/run/sandboxer"}, Port: Port, Args: args})
	c.Host, c.Port = "127.0.0.1", ctr.HostPort(ctx, Port)
	tlsConf, err := c.ClientTLS(c.Host)
	if err != nil {
		t.Fatal(err)
	}
	ctr.WaitFor(ctx, func(ctx context.Context) error { return Service{}.Ping(ctx, c, tlsConf) })
	if err := (Service{}).Ping(ctx, c, nil); err == nil {
		t.Error("a plain login was accepted")
	}
	other, err := certs.New("valkey", []string{"127.0.0.1"}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	wrong, _ := state.Credentials{CA: string(other.CAPEM)}.ClientTLS(c.Host)
	if err := (Service{}).Ping(ctx, c, wrong); err == nil {
		t.Error("a login trusting another CA was accepted")
	}
}
