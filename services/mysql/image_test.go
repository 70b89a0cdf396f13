package mysql

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/services/internal/enginetest"
	"github.com/sandboxer/sandboxer/state"
)

// The image's own contract, without sandboxer's init script: the
// official images' variables (with _FILE), the init directory's .sql.gz
// and .sh files, and a restart that keeps the data and does not
// initialise again.
func TestImageContract(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	image := enginetest.Image(t, testImage, "images/build.sh mysql")
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rootPW, userPW := "root-"+randomHex(6), "user-"+randomHex(6)
	writeFile(t, filepath.Join(dir, "root-pw"), []byte(rootPW))
	writeFile(t, filepath.Join(dir, "user-pw"), []byte(userPW+"\n")) // trailing newline: stripped, as $(<file) does
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte("CREATE TABLE seeded (v TEXT); INSERT INTO seeded VALUES ('from sql.gz');\n"))
	_ = zw.Close()
	initDir := filepath.Join(dir, "init")
	if err := os.Mkdir(initDir, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(initDir, "10-seed.sql.gz"), gz.Bytes())
	writeFile(t, filepath.Join(initDir, "20-more.sh"),
		[]byte("process_sql <<<\"INSERT INTO seeded VALUES ('from sh as $(id -un)')\"\n"))
	ctr := enginetest.Start(ctx, t, enginetest.Spec{
		Image: image,
		Env: []string{
			"MARIADB_ROOT_PASSWORD_FILE=/run/pw/root-pw",
			"MYSQL_DATABASE=shop",
			"MYSQL_USER=shopper",
			"MYSQL_PASSWORD_FILE=/run/pw/user-pw",
			"MARIADB_INITDB_SKIP_TZINFO=1",
		},
		Mounts: map[string]string{dir: "/run/pw", initDir: InitDir},
		Port:   Port,
	})
	port := ctr.HostPort(ctx, Port)
	ping := func(ctx context.Context) error {
		return Ping(ctx, "127.0.0.1", port, "shopper", state.Secret(userPW), "shop", nil)
	}
	ctr.WaitFor(ctx, ping)
	rows := func() []string {
		h, err := Open("127.0.0.1", port, "shopper", state.Secret(userPW), "shop", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer h.Close()
		r, err := h.QueryContext(ctx, "SELECT v FROM seeded ORDER BY v")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var out []string
		for r.Next() {
			var v string
			_ = r.Scan(&v)
			out = append(out, v)
		}
		return out
	}
	want := []string{"from sh as mysql", "from sql.gz"}
	if got := rows(); !slices.Equal(got, want) {
		t.Errorf("seeded rows %q, want %q", got, want)
	}
	if err := Ping(ctx, "127.0.0.1", port, "root", state.Secret(rootPW), "", nil); err != nil {
		t.Errorf("root with MARIADB_ROOT_PASSWORD_FILE's password: %v", err)
	}
	var out bytes.Buffer
	if err := ctr.Exec(ctx, "root", []string{"stat", "-c", "%U", "/proc/1"}, &out); err != nil || strings.TrimSpace(out.String()) != "mysql" {
		t.Errorf("the server runs as %q (%v), want mysql", out.String(), err)
	}
	// A restart keeps the data directory: no second initialisation.
	if outb, err := execDocker(ctx, "restart", ctr.Name); err != nil {
		t.Fatalf("docker restart: %v: %s", err, outb)
	}
	port = ctr.HostPort(ctx, Port)
	ctr.WaitFor(ctx, ping)
	if got := rows(); !slices.Equal(got, want) {
		t.Errorf("after a restart: rows %q, want %q", got, want)
	}
}

// The image's plugin directory, read without starting it, offers the
// whole allowlist.
func TestFeaturesFromImageFiles(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	files := enginetest.ImageFiles(ctx, t, enginetest.Image(t, testImage, "images/build.sh mysql"))
	got, err := Features(ctx, files)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, Allowed()) {
		t.Errorf("Features = %v, want %v", got, Allowed())
	}
	if _, err := files.Read(ctx, "/no/such/dir"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Read of a missing path: %v, want fs.ErrNotExist", err)
	}
}

// Without the secure_file_priv directory the server does not start, and
// the log says why: a runtime must mount one (the official images have
// none).
func TestSecureFilePrivDirRequired(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	image := enginetest.Image(t, testImage, "images/build.sh mysql")
	ctr := enginetest.Start(ctx, t, enginetest.Spec{
		Image: image,
		Env:   []string{"MARIADB_ROOT_PASSWORD=" + randomHex(8)},
		Args:  []string{"--secure-file-priv=/nonexistent-" + randomHex(4)},
	})
	if code := ctr.Wait(ctx); code == 0 {
		t.Error("the server started without its secure_file_priv directory")
	}
	if log := ctr.Logs(); !strings.Contains(log, "secure-file-priv") {
		t.Errorf("the log does not name secure-file-priv:\n%s", log)
	}
}
