package image

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/internal/testenv"
)

// serveConfig is a configuration serve can start with here: the Docker
// runtime (the test has no cluster to put the pod in), one on-demand
// block. Nothing is provisioned.
const serveConfig = `provider "docker" {
  image "postgres" {
    ref = "sandboxer.local/postgres:17"
  }
}

project "app" {
  services = ["postgres"]
}

sandbox "agent" {
  project   = project.app
  on_demand = true
  ttl       = "10m"
}
`

// TestImageServesAsTheChartRunsIt runs serve in the image the way
// deploy/helm's Deployment does: uid 65532, a read-only root, every
// capability dropped, no privilege escalation, writable scratch space only
// where the chart puts its emptyDirs, the configuration file, the token
// and the state key mounted read-only, the PostgreSQL state from the
// environment. serve becomes live and ready, answers with the token, and
// a SIGTERM drains it to a clean exit.
func TestImageServesAsTheChartRunsIt(t *testing.T) {
	ref, _ := image(t)
	pgURL := testenv.PostgresSchema(t)
	sock := "/var/run/docker.sock"
	st, err := os.Stat(sock)
	if err != nil {
		t.Skipf("serve's Docker runtime needs the local engine's socket to mount: %v", err)
	}
	gid := st.Sys().(*syscall.Stat_t).Gid

	dir := t.TempDir()
	files := map[string]string{"main.sbx.hcl": serveConfig, "token": "test-token-" + fmt.Sprint(os.Getpid()), "key": "a state key passphrase for the test"}
	for name, body := range files {
		// Readable by uid 65532: the chart mounts Secrets with fsGroup.
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	port := freePort(t)
	name := fmt.Sprintf("sandboxer-image-serve-test-%d", os.Getpid())
	scratch := func(path string) []string { return []string{"--tmpfs", path + ":uid=65532,gid=65532,mode=0770"} }
	args := []string{"run", "-d", "--name", name, "--network", "host",
		"--user", "65532:65532", "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
		"--group-add", fmt.Sprint(gid), "-v", sock + ":" + sock}
	args = append(args, scratch("/var/lib/sandboxer")...)
	args = append(args, scratch("/var/cache/sandboxer")...)
	args = append(args, scratch("/tmp")...)
	args = append(args,
		"-v", filepath.Join(dir, "main.sbx.hcl")+":/var/lib/sandboxer/main.sbx.hcl:ro",
		"-v", filepath.Join(dir, "token")+":/run/sandboxer/api-token/token:ro",
		"-v", filepath.Join(dir, "key")+":/run/sandboxer/state-key/key:ro",
		"-e", "SANDBOXER_BACKEND_URL="+pgURL,
		"-e", "SANDBOXER_STATE_KEY_FILE=/run/sandboxer/state-key/key",
		"-e", "SANDBOXER_CACHE_DIR=/var/cache/sandboxer",
		"-e", "SANDBOXER_REPLICA=image-test-0",
		"-e", "TMPDIR=/tmp",
		ref, "serve", "--chdir=/var/lib/sandboxer", fmt.Sprintf("--listen=127.0.0.1:%d", port),
		"--token-file=/run/sandboxer/api-token/token", "--log-format=json",
		"--shutdown-delay=1s", "--shutdown-timeout=20s")
	if _, err := docker(args...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = docker("rm", "-f", name) })
	logs := func() string { // serve logs to stderr, which docker logs replays there
		out, _ := exec.Command("docker", "logs", name).CombinedOutput()
		return string(out)
	}

	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	get := func(path, token string) (int, string) {
		req, _ := http.NewRequest(http.MethodGet, base+path, nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	waitFor := func(path string, want int) {
		deadline := time.Now().Add(60 * time.Second)
		for {
			code, body := get(path, "")
			if code == want {
				return
			}
			running, _ := docker("inspect", "-f", "{{.State.Running}}", name)
			if time.Now().After(deadline) || strings.TrimSpace(running) != "true" {
				t.Fatalf("GET %s = %d %s, want %d; serve's log:\n%s", path, code, body, want, logs())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	waitFor("/healthz", http.StatusOK)
	waitFor("/readyz", http.StatusOK)
	if code, body := get("/v1/sandboxes", files["token"]); code != http.StatusOK {
		t.Errorf("GET /v1/sandboxes with the token = %d %s", code, body)
	}
	if code, _ := get("/v1/sandboxes", ""); code != http.StatusUnauthorized {
		t.Errorf("GET /v1/sandboxes without a token = %d, want 401", code)
	}
	if code, body := get("/metrics", files["token"]); code != http.StatusOK || !strings.Contains(body, "sandboxer_state_up 1") {
		t.Errorf("GET /metrics = %d, want 200 with sandboxer_state_up 1", code)
	}

	// SIGTERM, as the kubelet stops a pod: drained, then a clean exit.
	if _, err := docker("stop", "-t", "30", name); err != nil {
		t.Fatal(err)
	}
	code, err := docker("inspect", "-f", "{{.State.ExitCode}}", name)
	if err != nil {
		t.Fatal(err)
	}
	if out := logs(); strings.TrimSpace(code) != "0" || !strings.Contains(out, "draining") || !strings.Contains(out, `"msg":"stopped"`) {
		t.Errorf("after SIGTERM: exit code %s; want 0 after draining and stopping; serve's log:\n%s", strings.TrimSpace(code), out)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
