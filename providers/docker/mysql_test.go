package docker

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/docker/docker/api/types/mount"
	"github.com/docker/docker/client"
	gomysql "github.com/go-sql-driver/mysql"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/services"
	mysqlsvc "github.com/sandboxer/sandboxer/services/mysql"
	"github.com/sandboxer/sandboxer/state"
)

func testMySQLImage() string {
	return envOr("SANDBOXER_TEST_MYSQL_IMAGE", "sandboxer.local/mysql:11.8")
}

// requireMySQLImage fails (never skips) when the engine is there but the
// mysql image is not (images/build.sh mysql).
func requireMySQLImage(t *testing.T, p *Provider) {
	t.Helper()
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	if _, err := cli.ImageInspect(context.Background(), testMySQLImage()); err != nil {
		t.Fatalf("test image %q is not available (%v): run images/build.sh mysql", testMySQLImage(), err)
	}
	p.cfg.Images["mysql"] = config.Image{Ref: testMySQLImage()}
}

// mysqlErrNumber is the server's error number of err, or 0.
func mysqlErrNumber(err error) uint16 {
	var me *gomysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

// MySQL on the Docker runtime through nothing of its own: the image's
// inspection (its plugin files), Create with the data directory on the
// sandbox's storage, the handed-out user with go-sql-driver/mysql and the
// image's mariadb client, the escape routes refused, Probe, Rotate,
// Delete.
func TestCreateMySQL(t *testing.T) {
	t.Parallel()
	p, secrets := newTestProvider(t)
	requireMySQLImage(t, p)
	p.ReadyTimeout = 3 * time.Minute // MariaDB's first start, on a loaded machine
	lineage := newLineage(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	t.Run("inspection", func(t *testing.T) {
		caps, err := p.Check(ctx, uses("mysql"))
		if err != nil {
			t.Fatalf("Check: %v", err)
		}
		my := caps[use("mysql")]
		for _, f := range mysqlsvc.Allowed() {
			if _, ok := my.Features[f]; !ok {
				t.Errorf("the local mysql image does not offer %s (offers %v)", f, my.Features)
			}
		}
		if !strings.Contains(my.Hint, `image "mysql"`) {
			t.Errorf("hint %q does not speak of mysql", my.Hint)
		}
		assertNoInspections(t, p)
	})

	req := apply.CreateRequest{Address: "sandbox.my", Lineage: lineage, Generation: 1,
		Features: config.FeatureSet{"mysql": {"archive"}}, Database: "shop"}
	created, err := p.Create(ctx, req)
	secrets.assertClean(t, err)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	rec := recordFor(req, created)
	c := created.Credentials["mysql"]
	if c.User == "" || c.User == "root" || c.User == c.AdminUser || c.Password == c.AdminPassword || c.Database != "shop" {
		t.Fatalf("credentials: user %q admin %q database %q", c.User, c.AdminUser, c.Database)
	}
	if u := c.URL("mysql"); !strings.HasPrefix(u, "mysql://"+c.User+":") || !strings.HasSuffix(u, "/shop") {
		t.Errorf("URL: %s", strings.ReplaceAll(u, c.Password.Reveal(), "***"))
	}
	if got := created.AvailableExtensions["mysql"]; !strings.Contains(strings.Join(got, ","), "archive") {
		t.Errorf("available: %v", got)
	}
	id := created.Resources.Containers["mysql"]

	t.Run("data directory on the sandbox's storage", func(t *testing.T) {
		ci, err := p.cli.ContainerInspect(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var data bool
		for _, m := range ci.Mounts {
			if m.Destination == dataRoot && m.Type == mount.TypeVolume {
				data = true
			}
		}
		if !data {
			t.Errorf("no volume at %s: %+v", dataRoot, ci.Mounts)
		}
		if opts, ok := ci.HostConfig.Tmpfs[mysqlsvc.SecureFilePrivDir]; !ok || !strings.HasPrefix(opts, "ro") {
			t.Errorf("no read-only tmpfs at %s: %v", mysqlsvc.SecureFilePrivDir, ci.HostConfig.Tmpfs)
		}
		var out bytes.Buffer
		if err := (containerRunner{p: p, id: id}).Exec(ctx, "root", []string{"sh", "-c", "ls " + dataRoot + "/mysql >/dev/null && stat -c %U " + dataRoot}, &out); err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(out.String()); got != "mysql" {
			t.Errorf("data root owned by %q, want mysql", got)
		}
	})

	app, err := mysqlsvc.Open(c.Host, c.Port, c.User, c.Password, c.Database, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	t.Run("app user", func(t *testing.T) {
		var who, db string
		if err := app.QueryRowContext(ctx, "SELECT CURRENT_USER(), DATABASE()").Scan(&who, &db); err != nil {
			t.Fatal(err)
		}
		if who != c.User+"@%" || db != "shop" {
			t.Errorf("logged in as %s in %s", who, db)
		}
		for _, q := range []string{
			"CREATE TABLE items (id INT PRIMARY KEY, note TEXT)",
			"INSERT INTO items VALUES (1, 'a')",
			"CREATE TABLE old (id INT) ENGINE=ARCHIVE",
			"CREATE DATABASE shop_test1",
			"DROP DATABASE shop_test1",
		} {
			if _, err := app.ExecContext(ctx, q); err != nil {
				t.Errorf("%s: %v", q, err)
			}
		}
		// The image's own client in the container, as the user, with the
		// password in an option file.
		r := containerRunner{p: p, id: id}
		cnf := "[client]\nuser=" + c.User + "\npassword=\"" + c.Password.Reveal() + "\"\n"
		if err := r.CopyIn(ctx, "/tmp/cli", nil, map[string][]byte{"my.cnf": []byte(cnf)}); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := r.Exec(ctx, "root", []string{"mariadb", "--defaults-extra-file=/tmp/cli/my.cnf", "-h127.0.0.1", "-N", "-B",
			"-e", "SELECT COUNT(*) FROM items", "shop"}, &out); err != nil {
			t.Fatalf("mariadb CLI: %v", err)
		}
		if strings.TrimSpace(out.String()) != "1" {
			t.Errorf("mariadb CLI: %q", out.String())
		}
		_ = r.Exec(ctx, "root", []string{"rm", "-rf", "/tmp/cli"}, nil)
	})

	t.Run("escape routes refused", func(t *testing.T) {
		var got sql.NullString
		if err := app.QueryRowContext(ctx, "SELECT LOAD_FILE('/etc/passwd')").Scan(&got); err != nil || got.Valid {
			t.Errorf("LOAD_FILE: %v, %v; want NULL", got, err)
		}
		for q, want := range map[string]uint16{
			"SELECT 1 INTO OUTFILE '/tmp/x'":                  1045,
			"LOAD DATA INFILE '/etc/passwd' INTO TABLE items": 1045,
			"SET GLOBAL max_connections = 5":                  1227,
			"CREATE USER 'x'@'%' IDENTIFIED BY 'y'":           1227,
			"GRANT ALL ON *.* TO CURRENT_USER()":              1045,
			"SELECT * FROM mysql.user":                        1142,
			"INSTALL SONAME 'ha_federatedx'":                  1044,
			"SHUTDOWN":                                        1227,
		} {
			_, err := app.ExecContext(ctx, q)
			if n := mysqlErrNumber(err); n == 0 {
				t.Errorf("%s: %v, want refused", q, err)
			} else if n != want {
				t.Logf("%s: refused with %d (%v)", q, n, err)
			}
		}
		// LOAD DATA LOCAL from a client that offers its files: the server
		// has local_infile off.
		file := filepath.Join(t.TempDir(), "rows.txt")
		if err := os.WriteFile(file, []byte("9\tz\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg := mysqlsvc.Config(c.Host, c.Port, c.User, c.Password, c.Database, nil)
		cfg.AllowAllFiles = true
		conn, err := gomysql.NewConnector(cfg)
		if err != nil {
			t.Fatal(err)
		}
		local := sql.OpenDB(conn)
		defer local.Close()
		if _, err := local.ExecContext(ctx, "LOAD DATA LOCAL INFILE '"+file+"' INTO TABLE items"); err == nil {
			t.Error("LOAD DATA LOCAL INFILE was accepted")
		}
		var n int
		if err := app.QueryRowContext(ctx, "SELECT COUNT(*) FROM items").Scan(&n); err != nil || n != 1 {
			t.Errorf("rows after LOAD DATA LOCAL: %d, %v", n, err)
		}
		// Root is the socket's only; the admin is not the user.
		if err := mysqlsvc.Ping(ctx, c.Host, c.Port, "root", c.AdminPassword, "", nil); err == nil {
			t.Error("root logs in over TCP")
		}
		if err := mysqlsvc.Ping(ctx, c.Host, c.Port, c.AdminUser, c.Password, "", nil); err == nil {
			t.Error("the admin logs in with the app's password")
		}
	})

	t.Run("probe", func(t *testing.T) {
		if err := p.Probe(ctx, rec); err != nil {
			t.Fatalf("Probe: %v", err)
		}
	})

	t.Run("rotate", func(t *testing.T) {
		s, ok := services.Lookup("mysql")
		if !ok {
			t.Fatal("mysql is not in the catalogue")
		}
		pw := state.Secret("rotated-" + lineage[:12])
		secrets.record(pw.Reveal())
		if err := s.Rotate(ctx, c, pw); err != nil {
			secrets.assertClean(t, err)
			t.Fatalf("Rotate: %v", err)
		}
		if err := mysqlsvc.Ping(ctx, c.Host, c.Port, c.User, c.Password, c.Database, nil); err == nil {
			t.Error("the old password still logs in")
		}
		if err := mysqlsvc.Ping(ctx, c.Host, c.Port, c.User, pw, c.Database, nil); err != nil {
			t.Errorf("the new password: %v", err)
		}
	})

	if err := p.Delete(ctx, rec); err != nil {
		secrets.assertClean(t, err)
		t.Fatalf("Delete: %v", err)
	}
	assertNothingLabelled(t, p, lineage)
}

// MySQL with TLS: the handed-out URL asks for verification against the
// instance's CA file, go-sql-driver logs in over TLS verified against it,
// plain and untrusting clients are refused.
func TestCreateMySQLTLS(t *testing.T) {
	t.Parallel()
	p, secrets := newTestProvider(t)
	requireMySQLImage(t, p)
	p.ReadyTimeout = 3 * time.Minute
	p.CADir = t.TempDir()
	lineage := newLineage(t, p)
	ip := hostAddress(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	req := apply.CreateRequest{Address: "sandbox.mytls", Lineage: lineage, Generation: 1,
		Features: config.FeatureSet{"mysql": {}},
		Publish:  config.Publish{Address: ip, AdvertiseHost: ip, TLS: true}}
	created, err := p.Create(ctx, req)
	secrets.assertClean(t, err)
	if err != nil {
		t.Fatalf("Create: %v", err)
	}
	rec := recordFor(req, created)
	c := created.Credentials["mysql"]
	if u := c.URL("mysql"); !strings.Contains(u, "ssl-mode=VERIFY_IDENTITY") || !strings.Contains(u, "ssl-ca="+c.CAFile) {
		t.Errorf("URL does not ask for verification against the CA file: %s", strings.ReplaceAll(u, c.Password.Reveal(), "***"))
	}
	pem, err := os.ReadFile(c.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	db, err := mysqlsvc.Open(c.Host, c.Port, c.User, c.Password, c.Database, &tls.Config{ServerName: ip, RootCAs: pool})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var cipher string
	var name string
	if err := db.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Ssl_cipher'").Scan(&name, &cipher); err != nil || cipher == "" {
		t.Errorf("not a TLS session: %q, %v", cipher, err)
	}
	if err := mysqlsvc.Ping(ctx, c.Host, c.Port, c.User, c.Password, c.Database, nil); err == nil {
		t.Error("a plain connection logged in")
	}
	if err := mysqlsvc.Ping(ctx, c.Host, c.Port, c.User, c.Password, c.Database, &tls.Config{ServerName: ip, RootCAs: x509.NewCertPool()}); err == nil {
		t.Error("a client that does not trust the CA logged in")
	}
	if err := p.Probe(ctx, rec); err != nil {
		t.Errorf("Probe: %v", err)
	}
	if err := p.Delete(ctx, rec); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := os.Stat(c.CAFile); !os.IsNotExist(err) {
		t.Errorf("CA file after Delete: %v", err)
	}
	assertNothingLabelled(t, p, lineage)
}
