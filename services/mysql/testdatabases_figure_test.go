package mysql

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/services/contract"
	"github.com/sandboxer/sandboxer/state"
)

// The figure of docs/performance.md: a hand-out (a copy of the
// template's tables and rows, its user) beside what a test would do
// without a template (CREATE DATABASE, a user, the migration run as it),
// p50 and p90 of n each, for the small schema of TestTestDatabases, one
// of twenty tables and the small one with ten ALTER TABLE steps after
// it, the data directory on a tmpfs. Run with SBX_MYSQL_TESTDB_FIGURE=1.
func TestTestDatabasesFigure(t *testing.T) {
	if os.Getenv("SBX_MYSQL_TESTDB_FIGURE") == "" {
		t.Skip("SBX_MYSQL_TESTDB_FIGURE=1 runs the figure")
	}
	ctx := context.Background()
	// The data directory on a tmpfs, as a block with storage = "tmpfs"
	// (the database host of a test suite) has it.
	in := startInstanceOn(ctx, t, nil, nil, []string{DataDir + ":mode=1777"})
	tdb, err := OpenTestDatabases(ctx, in.creds)
	if err != nil {
		t.Fatal(err)
	}
	defer tdb.Close()
	root := in.open(t, in.creds.AdminUser, in.creds.AdminPassword, "")
	twenty := []string{}
	for i := range 20 {
		twenty = append(twenty, fmt.Sprintf("CREATE TABLE t%d (id int AUTO_INCREMENT PRIMARY KEY, a varchar(40), b int, KEY (b)); INSERT INTO t%d (a, b) VALUES ('x', 1), ('y', 2)", i, i))
	}
	// A history of migrations: the small schema, then ten ALTER TABLE
	// steps (a column, an index) as an app's migrations pile up.
	history := slices.Clone(testMigration)
	for i := range 10 {
		history = append(history, fmt.Sprintf("ALTER TABLE books ADD COLUMN c%d int NOT NULL DEFAULT %d, ADD KEY (c%d)", i, i, i))
	}
	const n = 50
	for _, sc := range []struct {
		name  string
		texts []string
	}{{"small (2 tables, 4 rows)", testMigration}, {"20 tables, 40 rows", twenty}, {"small + 10 ALTER TABLE steps", history}} {
		m := migration(sc.texts...)
		start := time.Now()
		first, err := tdb.Take(ctx, m, contract.DatabaseOptions{})
		if err != nil {
			t.Fatal(err)
		}
		tplTime := time.Since(start)
		_ = tdb.Drop(ctx, first.Name)
		var take, plain []time.Duration
		for range n {
			start := time.Now()
			d, err := tdb.Take(ctx, m, contract.DatabaseOptions{})
			if err != nil {
				t.Fatal(err)
			}
			take = append(take, time.Since(start))
			if err := tdb.Drop(ctx, d.Name); err != nil {
				t.Fatal(err)
			}
			// Without a template: the same user and grant, then the
			// migration run as that user.
			name := "plain_" + randomHex(6)
			pw := state.Secret(randomHex(16))
			start = time.Now()
			for _, q := range []string{
				"CREATE DATABASE " + QuoteIdent(name) + " CHARACTER SET utf8mb4",
				"CREATE USER " + Account(name) + " IDENTIFIED VIA mysql_native_password USING " + QuoteString(NativePasswordHash(pw.Reveal())),
				fmt.Sprintf("GRANT %s ON %s.* TO %s", AppPrivileges, QuoteIdent(escapePattern(name)), Account(name)),
			} {
				if _, err := root.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			if err := tdb.migrate(ctx, name, name, pw, sc.texts); err != nil {
				t.Fatal(err)
			}
			plain = append(plain, time.Since(start))
			for _, q := range []string{"DROP DATABASE " + QuoteIdent(name), "DROP USER " + Account(name)} {
				if _, err := root.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
		}
		t.Logf("%s: template made in %v; hand-out p50 %v p90 %v; CREATE DATABASE + migration p50 %v p90 %v (n=%d each)",
			sc.name, tplTime.Round(time.Millisecond), pct(take, 50), pct(take, 90), pct(plain, 50), pct(plain, 90), n)
	}
}

func pct(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[(len(s)-1)*p/100].Round(100 * time.Microsecond)
}
