package mysql

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/services/contract"
	"github.com/sandboxer/sandboxer/state"
)

// The schema every copy must carry: a foreign key, a generated column,
// a secondary index, an AUTO_INCREMENT counter, rows; two texts, one of
// them with two statements.
var testMigration = []string{
	`CREATE TABLE authors (id int AUTO_INCREMENT PRIMARY KEY, name varchar(40) NOT NULL, UNIQUE KEY by_name (name));
	 CREATE TABLE books (id int AUTO_INCREMENT PRIMARY KEY, author int NOT NULL, title varchar(80),
	   slug varchar(80) AS (lower(title)) STORED, KEY by_slug (slug), FOREIGN KEY (author) REFERENCES authors (id))`,
	`INSERT INTO authors (name) VALUES ('ada'), ('grace'); INSERT INTO books (author, title) VALUES (1, 'Notes'), (2, 'COBOL')`,
}

func migration(texts ...string) contract.Migration {
	return contract.Migration{Hash: strings.Join(texts, "\x00"), SQL: texts}
}

// On the real engine: two tests' databases are copies of the template
// (tables, rows, indexes, keys), each reachable only by its own user,
// whose escape routes are refused; drop leaves nothing; a failing or
// uncopyable migration leaves nothing; concurrent first uses from two
// processes make one template; reap drops a killed process's databases.
func TestTestDatabases(t *testing.T) {
	if os.Getenv("SBX_MYSQL_TESTDB_CHILD") != "" {
		t.Skip("the child process's own test runs in TestTestDatabasesChild")
	}
	ctx := context.Background()
	in := startInstance(ctx, t, nil)
	tdb, err := OpenTestDatabases(ctx, in.creds)
	if err != nil {
		t.Fatal(err)
	}
	defer tdb.Close()
	root := in.open(t, in.creds.AdminUser, in.creds.AdminPassword, "")
	schemas := func() []string {
		t.Helper()
		rows, err := root.QueryContext(ctx, "SELECT SCHEMA_NAME FROM information_schema.SCHEMATA WHERE SCHEMA_NAME LIKE 'sbxt%' ORDER BY 1")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			_ = rows.Scan(&s)
			out = append(out, s)
		}
		return out
	}
	users := func() int {
		t.Helper()
		var n int
		if err := root.QueryRowContext(ctx, "SELECT count(*) FROM mysql.user WHERE User LIKE 'sbxt%'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	t.Run("isolation", func(t *testing.T) {
		m := migration(testMigration...)
		a, err := tdb.Take(ctx, m, contract.DatabaseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b, err := tdb.Take(ctx, m, contract.DatabaseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if a.Name == b.Name || a.User == b.User || a.Password == b.Password {
			t.Fatalf("two hand-outs share a name, user or password: %s %s", a.Name, b.Name)
		}
		tpl := TemplateName(m.Hash)
		ha := in.open(t, a.User, a.Password, a.Name)
		hb := in.open(t, b.User, b.Password, b.Name)
		// The migration's rows, keys and generated column in each copy.
		for name, h := range map[string]*sql.DB{a.Name: ha, b.Name: hb} {
			var titles string
			if err := h.QueryRowContext(ctx, "SELECT group_concat(a.name, ':', b.slug ORDER BY b.id) FROM books b JOIN authors a ON a.id = b.author").Scan(&titles); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if titles != "ada:notes,grace:cobol" {
				t.Errorf("%s holds %q", name, titles)
			}
			if _, err := h.ExecContext(ctx, "INSERT INTO books (author, title) VALUES (99, 'orphan')"); mysqlErr(err) != 1452 {
				t.Errorf("%s: the foreign key did not hold: %v", name, err)
			}
			var id int64
			if _, err := h.ExecContext(ctx, "INSERT INTO authors (name) VALUES ('linus')"); err != nil {
				t.Fatal(err)
			}
			if err := h.QueryRowContext(ctx, "SELECT id FROM authors WHERE name = 'linus'").Scan(&id); err != nil || id != 3 {
				t.Errorf("%s: the AUTO_INCREMENT counter gave %d (%v), want 3", name, id, err)
			}
			if _, err := h.ExecContext(ctx, "INSERT INTO authors (name) VALUES ('ada')"); mysqlErr(err) != 1062 {
				t.Errorf("%s: the unique index did not hold: %v", name, err)
			}
		}
		// A writes; B does not see it; neither reaches the other's
		// database nor the template.
		if _, err := ha.ExecContext(ctx, "DELETE FROM books"); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := hb.QueryRowContext(ctx, "SELECT count(*) FROM books").Scan(&n); err != nil || n != 2 {
			t.Errorf("B's books after A's delete: %d, %v", n, err)
		}
		for _, other := range []string{b.Name, tpl, metaDB, "mysql"} {
			if _, err := ha.ExecContext(ctx, "USE "+QuoteIdent(other)); mysqlErr(err) != 1044 {
				t.Errorf("A uses %s: %v, want error 1044", other, err)
			}
		}
		if err := ha.QueryRowContext(ctx, "SELECT count(*) FROM "+QuoteIdent(b.Name)+".books").Scan(&n); mysqlErr(err) != 1142 {
			t.Errorf("A reads B's books: %v, want error 1142", err)
		}
		var seen []string
		rows, err := ha.QueryContext(ctx, "SHOW DATABASES")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var s string
			_ = rows.Scan(&s)
			seen = append(seen, s)
		}
		rows.Close()
		if !slices.Equal(seen, []string{a.Name, "information_schema"}) && !slices.Equal(seen, []string{"information_schema", a.Name}) {
			t.Errorf("A sees databases %v", seen)
		}
		// Escape routes.
		for q, want := range map[string]uint16{
			"CREATE USER 'x'@'%' IDENTIFIED BY 'y'":           1227,
			"SET GLOBAL max_connections = 1":                  1227,
			"SELECT 1 INTO OUTFILE '/tmp/sbx-escape'":         1227, // no FILE
			"GRANT SELECT ON *.* TO " + Account(a.User):       1045,
			"CREATE DATABASE " + QuoteIdent(a.Name+"_shadow"): 1044, // no CreateDB asked
		} {
			if _, err := ha.ExecContext(ctx, q); mysqlErr(err) != want {
				t.Errorf("%s: %v, want error %d", q, err, want)
			}
		}
		for _, d := range []contract.TestDatabase{a, b} {
			if err := tdb.Drop(ctx, d.Name); err != nil {
				t.Fatal(err)
			}
		}
		if err := tdb.Drop(ctx, a.Name); err != nil {
			t.Errorf("a second drop: %v", err)
		}
		if got := schemas(); !slices.Equal(got, []string{tpl}) {
			t.Errorf("after the drops: %v, want only the template", got)
		}
		if n := users(); n != 0 {
			t.Errorf("%d test users left after the drops", n)
		}
	})

	t.Run("createdb", func(t *testing.T) {
		d, err := tdb.Take(ctx, migration(testMigration...), contract.DatabaseOptions{CreateDB: true})
		if err != nil {
			t.Fatal(err)
		}
		h := in.open(t, d.User, d.Password, d.Name)
		if _, err := h.ExecContext(ctx, "CREATE DATABASE "+QuoteIdent(d.Name+"_shadow")); err != nil {
			t.Fatal(err)
		}
		if err := tdb.Drop(ctx, d.Name); err != nil {
			t.Fatal(err)
		}
		for _, s := range schemas() {
			if strings.HasPrefix(s, d.Name) {
				t.Errorf("%s left after the drop", s)
			}
		}
	})

	t.Run("bad migrations leave nothing", func(t *testing.T) {
		before := schemas()
		for _, texts := range [][]string{
			{"CREATE TABLE ok (id int)", "CREATE TABLE broken ("},
			{"CREATE TABLE t (id int)", "CREATE VIEW v AS SELECT id FROM t"},
			{"CREATE USER 'evil'@'%'"},
		} {
			_, err := tdb.Take(ctx, migration(texts...), contract.DatabaseOptions{})
			var me *MigrationError
			if !errors.As(err, &me) {
				t.Errorf("%q: %v, want a MigrationError", texts, err)
				continue
			}
			t.Logf("%q: %v", texts, err)
		}
		if got := schemas(); !slices.Equal(got, before) {
			t.Errorf("databases after failed migrations: %v, want %v", got, before)
		}
		var n int
		if err := root.QueryRowContext(ctx, "SELECT count(*) FROM mysql.user WHERE User LIKE 'sbxtpl%' OR User = 'evil'").Scan(&n); err != nil || n != 0 {
			t.Errorf("%d template users left (%v)", n, err)
		}
		if _, err := tdb.Take(ctx, contract.Migration{Hash: "f", Run: func() {}}, contract.DatabaseOptions{}); err == nil {
			t.Error("a function migration was taken")
		}
	})

	t.Run("processes", func(t *testing.T) {
		// Two processes' first uses of one migration at once: one makes
		// the template, both get a copy. The migration records each run.
		texts := []string{"CREATE TABLE runs (at datetime(6)); DO SLEEP(1); INSERT INTO runs VALUES (now(6))", fmt.Sprint("-- ", time.Now().UnixNano())}
		var wg sync.WaitGroup
		names := make([]string, 2)
		errs := make([]error, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				names[i], errs[i] = runChild(ctx, in.creds, texts, "take", nil)
			}()
		}
		wg.Wait()
		for i := range 2 {
			if errs[i] != nil {
				t.Fatalf("child %d: %v", i, errs[i])
			}
		}
		var runs int
		if err := root.QueryRowContext(ctx, "SELECT count(*) FROM "+QuoteIdent(TemplateName(migration(texts...).Hash))+".runs").Scan(&runs); err != nil || runs != 1 {
			t.Errorf("the migration ran %d times (%v), want once", runs, err)
		}
		// Twenty first uses at once in this process, beyond its admin
		// pool of connections: one template, no deadlock.
		texts2 := []string{texts[0], fmt.Sprint("-- in process ", time.Now().UnixNano())}
		var mine []string
		var mu sync.Mutex
		for range 20 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
				defer cancel()
				d, err := tdb.Take(ctx, migration(texts2...), contract.DatabaseOptions{})
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				mine = append(mine, d.Name)
				mu.Unlock()
			}()
		}
		wg.Wait()
		if err := root.QueryRowContext(ctx, "SELECT count(*) FROM "+QuoteIdent(TemplateName(migration(texts2...).Hash))+".runs").Scan(&runs); err != nil || runs != 1 {
			t.Errorf("the migration ran %d times in one process (%v), want once", runs, err)
		}
		for _, n := range mine {
			if err := tdb.Drop(ctx, n); err != nil {
				t.Fatal(err)
			}
		}
		// The children exited without dropping: their databases are a
		// dead process's, and reap drops them.
		dropped, err := tdb.Reap(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			if !slices.Contains(dropped, n) {
				t.Errorf("reap dropped %v, not %s", dropped, n)
			}
		}
		// A killed child's too; a live process's stays.
		live, err := tdb.Take(ctx, migration(testMigration...), contract.DatabaseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		killed, err := runChild(ctx, in.creds, testMigration, "hold", func(p *os.Process) { _ = p.Kill() })
		if err != nil {
			t.Fatal(err)
		}
		dropped, err = tdb.Reap(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(dropped, []string{killed}) {
			t.Errorf("reap dropped %v, want [%s]", dropped, killed)
		}
		if got := schemas(); slices.Contains(got, killed) || !slices.Contains(got, live.Name) {
			t.Errorf("after reap: %v", got)
		}
		if err := tdb.Drop(ctx, live.Name); err != nil {
			t.Fatal(err)
		}
	})
}

// runChild runs this test binary's TestTestDatabasesChild, which takes
// a database of texts' template and prints its name; "hold" keeps the
// child running until kill ends it.
func runChild(ctx context.Context, c state.Credentials, texts []string, mode string, kill func(*os.Process)) (string, error) {
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestTestDatabasesChild$", "-test.v")
	cmd.Env = append(os.Environ(), "SBX_MYSQL_TESTDB_CHILD="+mode,
		"SBX_MYSQL_TESTDB_PORT="+strconv.Itoa(c.Port), "SBX_MYSQL_TESTDB_ADMIN="+c.AdminUser,
		"SBX_MYSQL_TESTDB_PW="+c.AdminPassword.Reveal(), "SBX_MYSQL_TESTDB_SQL="+strings.Join(texts, "\x1e"))
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	buf := make([]byte, 0, 4096)
	tmp := make([]byte, 4096)
	name := ""
	for name == "" {
		n, rerr := out.Read(tmp)
		buf = append(buf, tmp[:n]...)
		if i := strings.Index(string(buf), "DATABASE="); i >= 0 {
			if j := strings.IndexByte(string(buf[i:]), '\n'); j >= 0 {
				name = string(buf[i+len("DATABASE=") : i+j])
				break
			}
		}
		if rerr != nil {
			_ = cmd.Wait()
			return "", fmt.Errorf("child said %s: %w", buf, rerr)
		}
	}
	if kill != nil {
		kill(cmd.Process)
	}
	_ = cmd.Wait()
	return name, nil
}

// TestTestDatabasesChild is runChild's other end.
func TestTestDatabasesChild(t *testing.T) {
	mode := os.Getenv("SBX_MYSQL_TESTDB_CHILD")
	if mode == "" {
		t.Skip("run by TestTestDatabases")
	}
	port, _ := strconv.Atoi(os.Getenv("SBX_MYSQL_TESTDB_PORT"))
	c := state.Credentials{Host: "127.0.0.1", Port: port, AdminUser: os.Getenv("SBX_MYSQL_TESTDB_ADMIN"),
		AdminPassword: state.Secret(os.Getenv("SBX_MYSQL_TESTDB_PW"))}
	tdb, err := OpenTestDatabases(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	d, err := tdb.Take(context.Background(), migration(strings.Split(os.Getenv("SBX_MYSQL_TESTDB_SQL"), "\x1e")...), contract.DatabaseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("DATABASE=%s\n", d.Name)
	if mode == "hold" {
		time.Sleep(time.Minute)
	}
}
