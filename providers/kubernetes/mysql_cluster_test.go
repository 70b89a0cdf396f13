package kubernetes

import (
	"database/sql"
	"errors"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/services"
	mysqlsvc "github.com/sandboxer/sandboxer/services/mysql"
	"github.com/sandboxer/sandboxer/state"
)

// MySQL on the real cluster: the pod comes up from services/mysql's start
// (as the image's mysql user, every capability dropped, the data on the
// pod's emptyDir), the handed-out user logs in with go-sql-driver/mysql
// at the pod IP to its own database, the escapes a sandbox user must not
// have are refused, and a rotation binds new credentials.
func TestMySQLOnCluster(t *testing.T) {
	t.Parallel()
	p, _ := newTestProvider(t)
	p.cfg.Images["mysql"] = config.Image{Ref: envOr("SANDBOXER_TEST_MYSQL_IMAGE", "sandboxer.local/mysql:11.8")}
	if p.ReadyTimeout < 3*time.Minute {
		p.ReadyTimeout = 3 * time.Minute // MariaDB's first start on a loaded node
	}
	lineage := newLineage(t, p)
	rec := createInstance(t, p, apply.CreateRequest{Address: "sandbox.mysql", Lineage: lineage, Generation: 1,
		Features: config.FeatureSet{"mysql": {"blackhole"}}, Database: "shop"})
	ctx := ctxFor(t, 2*time.Minute)
	c := rec.Credentials["mysql"]
	db, err := mysqlsvc.Open(c.Host, c.Port, c.User, c.Password, c.Database, nil)
	mustf(t, err, "open")
	defer db.Close()
	var who, name string
	mustf(t, db.QueryRowContext(ctx, "SELECT CURRENT_USER(), DATABASE()").Scan(&who, &name), "login as the handed-out user")
	if who != c.User+"@%" || name != "shop" {
		t.Errorf("logged in as %s in %s", who, name)
	}
	for _, q := range []string{"CREATE TABLE t (id INT) ENGINE=BLACKHOLE", "INSERT INTO t VALUES (1)", "CREATE TABLE k (id INT PRIMARY KEY)"} {
		_, err := db.ExecContext(ctx, q)
		mustf(t, err, "%s", q)
	}
	var file sql.NullString
	if err := db.QueryRowContext(ctx, "SELECT LOAD_FILE('/etc/passwd')").Scan(&file); err != nil || file.Valid {
		t.Errorf("LOAD_FILE: %v, %v; want NULL", file, err)
	}
	for _, q := range []string{
		"SELECT 1 INTO OUTFILE '/tmp/x'",
		"SET GLOBAL max_connections = 5",
		"CREATE USER 'x'@'%' IDENTIFIED BY 'y'",
		"SELECT * FROM mysql.user",
	} {
		_, err := db.ExecContext(ctx, q)
		var me *gomysql.MySQLError
		if !errors.As(err, &me) {
			t.Errorf("%s: %v, want refused", q, err)
		}
	}
	s, _ := services.Lookup("mysql")
	pw := state.Secret("rotated-" + lineage[:8])
	mustf(t, s.Rotate(ctx, c, pw), "rotate")
	if err := mysqlsvc.Ping(ctx, c.Host, c.Port, c.User, pw, c.Database, nil); err != nil {
		t.Errorf("the rotated password: %v", err)
	}
	if err := mysqlsvc.Ping(ctx, c.Host, c.Port, c.User, c.Password, c.Database, nil); err == nil {
		t.Error("the old password still logs in")
	}
}
