package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"testing"

	"github.com/sandboxer/sandboxer/internal/testenv"
)

// imageEnv names the image to check; the default is the one make image
// builds for this source's version.
const imageEnv = "SANDBOXER_TEST_IMAGE"

// TestImage checks the image make image built: it prints this source's
// version, runs as a non-root user, with a read-only root and no
// capabilities (as the chart runs it), and holds both programs, the CA
// bundle and no shell.
func TestImage(t *testing.T) {
	ref, version := image(t)

	user, err := docker("image", "inspect", "--format", "{{.Config.User}}", ref)
	if err != nil {
		t.Fatal(err)
	}
	user = strings.TrimSpace(user)
	if uid, _, _ := strings.Cut(user, ":"); uid == "" || uid == "0" || uid == "root" {
		t.Errorf("the image runs as %q, want a non-root uid", user)
	} else if n, err := strconv.Atoi(uid); err != nil || n != 65532 {
		t.Errorf("the image's user is %q, want the numeric uid 65532 (runAsNonRoot needs a number)", user)
	}

	out, err := docker("run", "--rm", "--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges", "--network", "none", ref, "version")
	if want := "sandboxer v" + version + "\n"; err != nil || out != want {
		t.Errorf("docker run %s version = %q, %v; want %q", ref, out, err, want)
	}
	out, err = docker("run", "--rm", "--network", "none", "--entrypoint", "/usr/local/bin/sandboxer", ref, "version")
	if err != nil || !strings.HasPrefix(out, "sandboxer v") {
		t.Errorf("the program at /usr/local/bin/sandboxer: %q, %v", out, err)
	}

	files := imageFiles(t, ref)
	for _, want := range []string{"usr/local/bin/sandboxer", "usr/local/bin/sandboxer-kubernetes"} {
		if mode, ok := files[want]; !ok || mode&0o111 == 0 {
			t.Errorf("%s is missing or not executable (mode %v)", want, mode)
		}
	}
	for _, want := range []string{"etc/ssl/certs/ca-certificates.crt", "etc/passwd", "etc/group"} {
		if _, ok := files[want]; !ok {
			t.Errorf("%s is missing", want)
		}
	}
	for name := range files {
		switch path.Base(name) {
		case "sh", "bash", "dash", "ash", "busybox":
			t.Errorf("the image has a shell: /%s", name)
		}
	}
}

// imageFiles lists the files of a container of ref (not started) with
// their modes; the container is removed on the way out.
func imageFiles(t *testing.T, ref string) map[string]os.FileMode {
	t.Helper()
	name := fmt.Sprintf("sandboxer-image-test-%d", os.Getpid())
	if _, err := docker("create", "--name", name, ref); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = docker("rm", "-f", name) })
	cmd := exec.Command("docker", "export", name)
	r, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	files := map[string]os.FileMode{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("docker export %s: %v", name, err)
		}
		files[strings.TrimPrefix(path.Clean(h.Name), "/")] = h.FileInfo().Mode()
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("docker export %s: %v", name, err)
	}
	return files
}

// image is the image to check and the source's version; it skips (or
// fails, with SANDBOXER_REQUIRE_DOCKER=1) without an engine or the image.
func image(t *testing.T) (ref, version string) {
	t.Helper()
	testenv.RequireDocker(t)
	version = testenv.SourceVersion(t)
	ref = os.Getenv(imageEnv)
	if ref == "" {
		ref = "sandboxer.local/sandboxer:" + version
	}
	if _, err := docker("image", "inspect", ref); err != nil {
		if testenv.Required() {
			t.Fatalf("no image %s (make image builds it), and %s=1 requires one: %v", ref, testenv.RequireEnv, err)
		}
		t.Skipf("no image %s (make image builds it; %s names another)", ref, imageEnv)
	}
	return ref, version
}

func docker(args ...string) (string, error) {
	cmd := exec.Command("docker", args...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return string(out), fmt.Errorf("docker %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}
