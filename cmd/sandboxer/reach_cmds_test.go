package main

import (
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

// reachCmds are the scenario commands for user networks and TLS.
func reachCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"usernet":   cmdUserNet,
		"netclient": cmdNetClient,
		"cafile":    cmdCAFile,
	}
}

// cmdUserNet creates a user network, as `docker network create` would,
// puts its name in the script variable VAR and removes it when the script
// ends, whatever happened.
//
//	usernet VAR
func cmdUserNet(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: usernet VAR")
	}
	b := make([]byte, 4)
	rand.Read(b)
	name := "sbx-test-net-" + hex.EncodeToString(b)
	out, err := exec.Command("docker", "network", "create", "--label", "sandboxer.test=reach", name).CombinedOutput()
	if err != nil {
		ts.Fatalf("docker network create: %v: %s", err, out)
	}
	ts.Setenv(args[0], name)
	ts.Defer(func() {
		// Containers a failed run left on it would block the removal.
		if out, err := exec.Command("docker", "network", "rm", name).CombinedOutput(); err != nil {
			ts.Logf("docker network rm %s: %v: %s", name, err, out)
		}
	})
}

// cmdNetClient runs a client container on a user network with an
// in-network URL from an env JSON file: psql (SELECT 1) from the postgres
// image, or redis-cli (PING) from the redis image. The URL reaches the
// container through its environment, not its command line.
//
//	netclient NETWORK ENVJSON postgres|redis
func cmdNetClient(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: netclient NETWORK ENVJSON postgres|redis")
	}
	env := envFile(ts, args[1])
	var image, script string
	switch args[2] {
	case "postgres":
		image = envOr("SANDBOXER_TEST_POSTGRES_IMAGE", "sandboxer.local/postgres:17")
		script = `psql "$URL" -tAc "SELECT 'reached ' || current_user"`
	case "redis":
		image = envOr("SANDBOXER_TEST_REDIS_IMAGE", "sandboxer.local/redis:7")
		script = `redis-cli --no-auth-warning -u "$URL" PING`
	default:
		ts.Fatalf("netclient: unknown service %q", args[2])
	}
	url := env["SANDBOXER_"+strings.ToUpper(args[2])+"_NETWORK_URL"]
	if url == "" {
		ts.Fatalf("netclient: %s has no in-network URL", args[1])
	}
	cmd := exec.Command("docker", "run", "--rm", "--label", "sandboxer.test=reach", "--network", args[0],
		"-e", "URL", "--entrypoint", "sh", image, "-c", script)
	cmd.Env = append(os.Environ(), "URL="+url)
	out, err := cmd.CombinedOutput()
	text := strings.ReplaceAll(string(out), url, "(url)")
	if err == nil && !strings.Contains(text, "reached app") && !strings.Contains(text, "PONG") {
		err = errUnexpected(text)
	}
	if err != nil && !neg {
		ts.Fatalf("netclient %s: %v: %s", args[2], err, text)
	}
	if err == nil && neg {
		ts.Fatalf("netclient %s: unexpectedly reached it: %s", args[2], text)
	}
	ts.Logf("netclient %s: %s", args[2], strings.TrimSpace(text))
}

type errUnexpected string

func (e errUnexpected) Error() string { return "unexpected output " + string(e) }

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// caPool reads the CA file an env JSON names for svc, nil when none.
func caPool(ts *testscript.TestScript, env map[string]string, svc string) *x509.CertPool {
	path := env["SANDBOXER_"+strings.ToUpper(svc)+"_CA"]
	if path == "" {
		return nil
	}
	pem, err := os.ReadFile(path)
	ts.Check(err)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		ts.Fatalf("%s holds no certificate", path)
	}
	return pool
}

// cmdCAFile checks that the CA file an env JSON names for postgres exists
// with the given mode and holds a certificate; `! cafile` expects it gone.
//
//	cafile ENVJSON MODE
func cmdCAFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: cafile ENVJSON MODE")
	}
	path := envFile(ts, args[0])["SANDBOXER_POSTGRES_CA"]
	if path == "" {
		ts.Fatalf("cafile: %s names no CA file", args[0])
	}
	fi, err := os.Stat(path)
	if neg {
		if !os.IsNotExist(err) {
			ts.Fatalf("cafile: %s still exists (%v)", path, err)
		}
		return
	}
	ts.Check(err)
	if got := fmt.Sprintf("%04o", fi.Mode().Perm()); got != args[1] {
		ts.Fatalf("cafile: %s has mode %s, want %s", path, got, args[1])
	}
	caPool(ts, map[string]string{"SANDBOXER_POSTGRES_CA": path}, "postgres")
}
