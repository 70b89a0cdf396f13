package mysql

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/state"
)

// One instance, as a sandbox gets it: the app user logs in with the
// driver and with the image's own client, the admin's credentials are not
// the app's, every escape route is refused, the plugins are checked, and
// the data round-trips through Dump and Load.
func TestInstance(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	in := startInstance(ctx, t, []string{"archive"})
	c := in.creds
	t.Logf("ready %v after docker run", in.ready.Round(time.Millisecond))
	app := in.open(t, c.User, c.Password, c.Database)

	t.Run("app user logs in", func(t *testing.T) {
		var who, db string
		if err := app.QueryRowContext(ctx, "SELECT CURRENT_USER(), DATABASE()").Scan(&who, &db); err != nil {
			t.Fatal(err)
		}
		if who != c.User+"@%" || db != c.Database {
			t.Errorf("logged in as %s in %s, want %s@%% in %s", who, db, c.User, c.Database)
		}
		// The image's client, over TCP inside the container, with the
		// handed-out credentials in an option file.
		cnf := "[client]\nuser=" + optionValue(c.User) + "\npassword=" + optionValue(c.Password.Reveal()) + "\n"
		dir := "/tmp/cli-" + randomHex(4)
		if err := in.ctr.CopyIn(ctx, dir, nil, map[string][]byte{"my.cnf": []byte(cnf)}); err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		err := in.ctr.Exec(ctx, "root", []string{"mariadb", "--defaults-extra-file=" + dir + "/my.cnf",
			"-h127.0.0.1", "-N", "-B", "-e", "SELECT CURRENT_USER()", c.Database}, &out)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(out.String()); got != c.User+"@%" {
			t.Errorf("mariadb CLI: CURRENT_USER() = %q", got)
		}
		// LOAD DATA LOCAL INFILE from the same client, which offers its
		// files (--local-infile=1): the server refuses it.
		err = in.ctr.Exec(ctx, "root", []string{"mariadb", "--defaults-extra-file=" + dir + "/my.cnf",
			"-h127.0.0.1", "--local-infile=1", c.Database, "-e",
			"CREATE TABLE li (line TEXT); LOAD DATA LOCAL INFILE '/etc/passwd' INTO TABLE li"}, nil)
		if err == nil || !strings.Contains(err.Error(), "not allowed") {
			t.Errorf("LOAD DATA LOCAL INFILE: %v, want refused (not allowed)", err)
		}
		var n int
		if err := app.QueryRowContext(ctx, "SELECT COUNT(*) FROM li").Scan(&n); err != nil || n != 0 {
			t.Errorf("after LOAD DATA LOCAL: %d rows, %v", n, err)
		}
	})

	t.Run("admin credentials are not the app's", func(t *testing.T) {
		if c.User == c.AdminUser || c.Password == c.AdminPassword {
			t.Fatal("the app got the admin's name or password")
		}
		if err := Ping(ctx, c.Host, c.Port, AdminUser, c.Password, "", nil); mysqlErr(err) != 1045 {
			t.Errorf("root with the app's password: %v, want access denied (1045)", err)
		}
		if err := Ping(ctx, c.Host, c.Port, AdminUser, c.AdminPassword, "", nil); err != nil {
			t.Errorf("root with the password file's password: %v", err)
		}
		var grants []string
		rows, err := app.QueryContext(ctx, "SHOW GRANTS")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var g string
			_ = rows.Scan(&g)
			grants = append(grants, g)
		}
		rows.Close()
		for _, g := range grants {
			if strings.Contains(g, " ON *.* ") && !strings.HasPrefix(g, "GRANT USAGE ON *.*") {
				t.Errorf("global grant: %s", g)
			}
			if strings.Contains(g, "WITH GRANT OPTION") || strings.Contains(g, "`mysql`") {
				t.Errorf("grant: %s", g)
			}
		}
	})

	t.Run("escape routes are refused", func(t *testing.T) {
		var content sql.NullString
		if err := app.QueryRowContext(ctx, "SELECT LOAD_FILE('/etc/passwd')").Scan(&content); err != nil || content.Valid {
			t.Errorf("LOAD_FILE: %q, %v; want NULL (no FILE privilege)", content.String, err)
		}
		refused := []struct{ name, stmt string }{
			{"INTO OUTFILE", "SELECT 1 INTO OUTFILE '/tmp/sbx-out'"},
			{"LOAD DATA INFILE", "LOAD DATA INFILE '/etc/passwd' INTO TABLE li"},
			{"SET GLOBAL", "SET GLOBAL max_connections = 5"},
			{"CREATE USER", "CREATE USER 'intruder'@'%' IDENTIFIED BY 'x'"},
			{"GRANT", "GRANT SELECT ON *.* TO '" + c.User + "'@'%'"},
			{"mysql.user", "SELECT * FROM mysql.user"},
			{"mysql.global_priv", "UPDATE mysql.global_priv SET priv = '{}'"},
			{"INSTALL SONAME", "INSTALL SONAME 'ha_federatedx'"},
			{"SHUTDOWN", "SHUTDOWN"},
			{"another database", "CREATE DATABASE other_" + randomHex(3)},
			{"SET DEFINER", "CREATE DEFINER='root'@'%' PROCEDURE p_root() SELECT 1"},
		}
		for _, r := range refused {
			if _, err := app.ExecContext(ctx, r.stmt); err == nil {
				t.Errorf("%s: allowed (%s)", r.name, r.stmt)
			} else if mysqlErr(err) == 0 {
				t.Errorf("%s: %v, want a refusal from the server", r.name, err)
			}
		}
		// Not even root reads or writes files outside the closed
		// secure_file_priv directory.
		root := in.open(t, AdminUser, c.AdminPassword, "")
		if err := root.QueryRowContext(ctx, "SELECT LOAD_FILE('/etc/passwd')").Scan(&content); err != nil || content.Valid {
			t.Errorf("LOAD_FILE as root: %q, %v; want NULL", content.String, err)
		}
		if _, err := root.ExecContext(ctx, "SELECT 1 INTO OUTFILE '/tmp/sbx-out'"); err == nil {
			t.Error("INTO OUTFILE /tmp as root: allowed")
		}
		// What a framework needs stays: its own test databases.
		for _, db := range []string{c.Database + "_test", "test_" + c.Database} {
			if _, err := app.ExecContext(ctx, "CREATE DATABASE "+QuoteIdent(db)); err != nil {
				t.Errorf("CREATE DATABASE %s: %v", db, err)
			}
		}
	})

	t.Run("plugins", func(t *testing.T) {
		got, err := Verify(ctx, app, testImage, []string{"archive"})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for n := range got {
			names = append(names, n)
		}
		slices.Sort(names)
		if !slices.Equal(names, Allowed()) {
			t.Errorf("available plugins %v, want the whole allowlist %v", names, Allowed())
		}
		if _, err := app.ExecContext(ctx, "CREATE TABLE arch (id INT) ENGINE=ARCHIVE"); err != nil {
			t.Errorf("ARCHIVE table: %v", err)
		}
		if _, err := Verify(ctx, app, testImage, []string{"blackhole"}); err == nil || !strings.Contains(err.Error(), "not ACTIVE") {
			t.Errorf("a plugin not installed: %v", err)
		}
		if _, err := Verify(ctx, app, testImage, []string{"federatedx"}); err == nil || !strings.Contains(err.Error(), "allowlist") {
			t.Errorf("a plugin off the allowlist: %v", err)
		}
	})

	t.Run("dump and load", func(t *testing.T) {
		for _, q := range []string{
			"CREATE TABLE items (id INT PRIMARY KEY, note TEXT, blob_col VARBINARY(8))",
			"INSERT INTO items VALUES (1, 'plain', 0x00ff), (2, 'DEFINER=`x`@`y` stays in data', NULL)",
			"CREATE VIEW item_notes AS SELECT note FROM items",
			"CREATE PROCEDURE count_items() SELECT COUNT(*) FROM items",
			"CREATE TRIGGER items_upper BEFORE INSERT ON items FOR EACH ROW SET NEW.note = UPPER(NEW.note)",
		} {
			if _, err := app.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		d := Data{Run: in.ctr, Creds: c}
		var dump bytes.Buffer
		if err := d.Dump(ctx, &dump); err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(dump.String(), "\n") {
			if strings.Contains(line, "DEFINER=`") && !strings.HasPrefix(line, "(") {
				t.Errorf("dump keeps a DEFINER clause: %s", line)
			}
		}
		if !strings.Contains(dump.String(), "DEFINER=`x`@`y` stays in data") {
			t.Error("the filter changed a row")
		}
		if _, err := app.ExecContext(ctx, "DELETE FROM items"); err != nil {
			t.Fatal(err)
		}
		if _, err := app.ExecContext(ctx, "CREATE TABLE stray (id INT)"); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "dump.sql")
		writeFile(t, path, dump.Bytes())
		if err := d.LoadFile(ctx, path); err != nil {
			t.Fatal(err)
		}
		app2 := in.open(t, c.User, c.Password, c.Database) // Load dropped the database the old sessions used
		var n int
		var note string
		if err := app2.QueryRowContext(ctx, "SELECT COUNT(*), MAX(note) FROM item_notes").Scan(&n, &note); err != nil || n != 2 {
			t.Errorf("after load: %d rows, %v", n, err)
		}
		if err := app2.QueryRowContext(ctx, "CALL count_items()").Scan(&n); err != nil || n != 2 {
			t.Errorf("procedure after load: %d, %v", n, err)
		}
		if _, err := app2.ExecContext(ctx, "INSERT INTO items VALUES (3, 'lower', NULL)"); err != nil {
			t.Fatal(err)
		}
		if err := app2.QueryRowContext(ctx, "SELECT note FROM items WHERE id = 3").Scan(&note); err != nil || note != "LOWER" {
			t.Errorf("trigger after load: %q, %v", note, err)
		}
		if _, err := app2.ExecContext(ctx, "SELECT * FROM stray"); mysqlErr(err) != 1146 {
			t.Errorf("a table made after the dump survived the load: %v", err)
		}

		// Carried to another sandbox: another user, another database.
		// The dump's objects were defined by the first user; loaded as the
		// second, they are the second's.
		other := c
		other.User, other.Password, other.Database = "carry_"+randomHex(4), state.Secret("pw-"+randomHex(8)), "carry_"+randomHex(4)
		root := in.open(t, AdminUser, c.AdminPassword, "")
		stmts := append([]string{"CREATE USER " + Account(other.User) + " IDENTIFIED BY " + QuoteString(other.Password.Reveal())},
			Grants(other.User, other.Database)...)
		for _, q := range stmts {
			if _, err := root.ExecContext(ctx, q); err != nil {
				t.Fatal(err)
			}
		}
		if err := (Data{Run: in.ctr, Creds: other}).LoadFile(ctx, path); err != nil {
			t.Fatalf("load into another user's database: %v", err)
		}
		carried := in.open(t, other.User, other.Password, other.Database)
		if err := carried.QueryRowContext(ctx, "CALL count_items()").Scan(&n); err != nil || n != 2 {
			t.Errorf("carried procedure: %d, %v", n, err)
		}
		var definer string
		if err := carried.QueryRowContext(ctx, "SELECT DEFINER FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE()").Scan(&definer); err != nil || definer != other.User+"@%" {
			t.Errorf("carried procedure's definer: %q, %v; want %s@%%", definer, err, other.User)
		}

		// Seed files run as the user, in order; an error names the file.
		dir := t.TempDir()
		seed1, seed2 := filepath.Join(dir, "a.sql"), filepath.Join(dir, "b.sql")
		writeFile(t, seed1, []byte("CREATE TABLE seeded (v INT); INSERT INTO seeded VALUES (1);\n"))
		writeFile(t, seed2, []byte("INSERT INTO seeded VALUES (2);\nSELECT LOAD_FILE('/etc/passwd') INTO OUTFILE '/tmp/x';\n"))
		err := (Data{Run: in.ctr, Creds: other}).RunSQL(ctx, []SQLFile{{Name: "seeds/a.sql", Path: seed1}, {Name: "seeds/b.sql", Path: seed2}})
		if err == nil || !strings.Contains(err.Error(), "seeds/b.sql") || !strings.Contains(err.Error(), "Access denied") {
			t.Errorf("a seed file that tries INTO OUTFILE: %v, want access denied naming seeds/b.sql", err)
		}
		if strings.Contains(fmt.Sprint(err), other.Password.Reveal()) {
			t.Error("the seed error holds the password")
		}
		if err := carried.QueryRowContext(ctx, "SELECT COUNT(*) FROM seeded").Scan(&n); err != nil || n != 2 {
			t.Errorf("seeded rows: %d, %v", n, err)
		}

		// A dump that fails half way is an error, not a partial success.
		broken := filepath.Join(dir, "broken.sql")
		writeFile(t, broken, []byte("CREATE TABLE first_half (id INT);\nTHIS IS NOT SQL;\nCREATE TABLE second_half (id INT);\n"))
		if err := (Data{Run: in.ctr, Creds: other}).LoadFile(ctx, broken); err == nil {
			t.Error("Load of a dump with a bad statement succeeded")
		}
		if _, err := carried.ExecContext(ctx, "SELECT * FROM second_half"); mysqlErr(err) != 1146 {
			t.Errorf("the statements after the bad one ran: %v", err)
		}
	})

	t.Run("rotate", func(t *testing.T) {
		held := in.open(t, c.User, c.Password, c.Database)
		hc, err := held.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer hc.Close()
		fresh := state.Secret("rotated-" + randomHex(8))
		if err := Rotate(ctx, c, fresh); err != nil {
			t.Fatal(err)
		}
		if err := hc.PingContext(ctx); err == nil {
			t.Error("a connection made with the old password is still open")
		}
		if err := Ping(ctx, c.Host, c.Port, c.User, c.Password, c.Database, nil); mysqlErr(err) != 1045 {
			t.Errorf("old password after Rotate: %v, want access denied", err)
		}
		c2 := c
		c2.Password = fresh
		if err := (Service{}).Ping(ctx, c2, nil); err != nil {
			t.Errorf("new password after Rotate: %v", err)
		}
		if err := Rotate(ctx, c2, c.Password); err != nil { // back, for what follows
			t.Fatal(err)
		}
	})

	t.Run("idle memory", func(t *testing.T) {
		time.Sleep(2 * time.Second)
		mib := in.ctr.MemoryMiB(ctx)
		t.Logf("idle memory (docker stats): %.1f MiB", mib)
		if mib > 256 {
			t.Errorf("idle memory %.1f MiB, more than the 256 MiB LeanArgs should keep it under", mib)
		}
	})
}
