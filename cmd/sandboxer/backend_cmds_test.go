package main

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/sandboxer/sandboxer/internal/testenv"
	"github.com/sandboxer/sandboxer/state"
	"github.com/sandboxer/sandboxer/state/pgstate"
)

// backendCmds are the script commands for state backend scenarios.
func backendCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"pgschema":     cmdPgSchema,
		"pgsql":        cmdPgSQL,
		"pgnosecret":   cmdPgNoSecret,
		"pgbadpass":    cmdPgBadPass,
		"pgholdlock":   cmdPgHoldLock,
		"nourl":        cmdNoURL,
		"filenosecret": cmdFileNoSecret,
	}
}

// pgRequired fails the run when SANDBOXER_REQUIRE_PG is set without a
// server, like SANDBOXER_REQUIRE_DOCKER for the engine.
func pgRequired(t *testing.T) {
	v := os.Getenv(testenv.PostgresRequireEnv)
	if os.Getenv(testenv.PostgresURLEnv) == "" && v != "" && v != "0" && v != "false" {
		t.Fatalf("%s is not set, and %s=1 requires a PostgreSQL server", testenv.PostgresURLEnv, testenv.PostgresRequireEnv)
	}
}

// cmdPgSchema makes a schema of the script's own on the test server and
// sets VAR to a URL selecting it; it is dropped when the script ends:
//
//	pgschema VAR
func cmdPgSchema(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: pgschema VAR")
	}
	base := os.Getenv(testenv.PostgresURLEnv)
	if base == "" {
		ts.Fatalf("pgschema: %s is not set", testenv.PostgresURLEnv)
	}
	schema := "sbxscript_" + strings.ToLower(strings.ReplaceAll(state.NewLineage(), "-", ""))[:16]
	ctx := context.Background()
	c, err := pgx.Connect(ctx, base)
	ts.Check(err)
	defer c.Close(ctx)
	_, err = c.Exec(ctx, "CREATE SCHEMA "+schema)
	ts.Check(err)
	ts.Defer(func() {
		c, err := pgx.Connect(ctx, base)
		if err != nil {
			return
		}
		defer c.Close(ctx)
		_, _ = c.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE")
	})
	u, err := url.Parse(base)
	ts.Check(err)
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	ts.Setenv(args[0], u.String())
}

// cmdPgSQL runs one statement on the database of $VAR:
//
//	pgsql VAR SQL
func cmdPgSQL(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: pgsql VAR SQL")
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, ts.Getenv(args[0]))
	ts.Check(err)
	defer c.Close(ctx)
	_, err = c.Exec(ctx, args[1])
	if (err != nil) != neg {
		ts.Fatalf("pgsql: %v", err)
	}
}

// cmdPgNoSecret fails if any row of any table of $VAR's schema holds one
// of the strings (bytea read as text); @FILE stands for the passwords and
// URLs in a request's env JSON:
//
//	pgnosecret VAR STRING|@ENVJSON...
func cmdPgNoSecret(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: pgnosecret VAR STRING...")
	}
	ctx := context.Background()
	c, err := pgx.Connect(ctx, ts.Getenv(args[0]))
	ts.Check(err)
	defer c.Close(ctx)
	rows, err := c.Query(ctx, `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`)
	ts.Check(err)
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	ts.Check(err)
	if len(tables) == 0 {
		ts.Fatalf("pgnosecret: no tables in the schema")
	}
	var all strings.Builder
	for _, tbl := range tables {
		rows, err := c.Query(ctx, `SELECT row_to_json(x)::text FROM `+pgx.Identifier{tbl}.Sanitize()+` x`)
		ts.Check(err)
		vals, err := pgx.CollectRows(rows, pgx.RowTo[string])
		ts.Check(err)
		for _, v := range vals {
			all.WriteString(v)
		}
		if tbl == "sandboxer_records" || tbl == "sandboxer_history" {
			rows, err := c.Query(ctx, `SELECT convert_from(data, 'UTF8') FROM `+pgx.Identifier{tbl}.Sanitize()+` WHERE data IS NOT NULL`)
			ts.Check(err)
			vals, err := pgx.CollectRows(rows, pgx.RowTo[string])
			ts.Check(err)
			for _, v := range vals {
				all.WriteString(v)
			}
		}
	}
	var secrets []string
	for _, a := range args[1:] {
		file, ok := strings.CutPrefix(a, "@")
		if !ok {
			secrets = append(secrets, a)
			continue
		}
		// @ENVJSON: every password and URL in a request's env.
		for name, v := range envFile(ts, file) {
			if strings.HasSuffix(name, "_PASSWORD") || strings.HasSuffix(name, "_URL") {
				secrets = append(secrets, v)
			}
		}
	}
	for _, s := range secrets {
		if strings.Contains(all.String(), s) {
			ts.Fatalf("pgnosecret: %q is stored in the clear", s)
		}
	}
}

// cmdPgBadPass sets DST to $SRC with the password replaced by PASSWORD:
//
//	pgbadpass SRC DST PASSWORD
func cmdPgBadPass(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: pgbadpass SRC DST PASSWORD")
	}
	u, err := url.Parse(ts.Getenv(args[0]))
	ts.Check(err)
	u.User = url.UserPassword(u.User.Username(), args[2])
	ts.Setenv(args[1], u.String())
}

// cmdPgHoldLock takes the whole-state lock of $VAR for the rest of the
// script, as another sandboxer process would:
//
//	pgholdlock VAR OPERATION
func cmdPgHoldLock(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: pgholdlock VAR OPERATION")
	}
	db := pgstate.NewDB(ts.Getenv(args[0]))
	b := pgstate.Open(db, nil)
	unlock, err := b.Lock(context.Background(), args[1], 0)
	ts.Check(err)
	ts.Defer(func() {
		_ = unlock()
		_ = b.Close()
		db.Close()
	})
}

// cmdNoURL fails if the last command's output holds $VAR's value or its
// password:
//
//	nourl VAR
func cmdNoURL(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: nourl VAR")
	}
	raw := ts.Getenv(args[0])
	out := ts.ReadFile("stdout") + ts.ReadFile("stderr")
	if strings.Contains(out, raw) {
		ts.Fatalf("nourl: the last command printed $%s", args[0])
	}
	if u, err := url.Parse(raw); err == nil {
		if p, ok := u.User.Password(); ok && strings.Contains(out, p) {
			ts.Fatalf("nourl: the last command printed the password of $%s", args[0])
		}
	}
}

// cmdFileNoSecret fails if FILE's bytes hold any password or URL of an
// env JSON file (the real credentials of a provisioned sandbox):
//
//	filenosecret FILE ENVJSON
func cmdFileNoSecret(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: filenosecret FILE ENVJSON")
	}
	data, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	n := 0
	for name, v := range envFile(ts, args[1]) {
		if !strings.HasSuffix(name, "_PASSWORD") {
			continue
		}
		n++
		if strings.Contains(string(data), v) {
			ts.Fatalf("filenosecret: %s holds the value of %s", args[0], name)
		}
	}
	if n == 0 {
		ts.Fatalf("filenosecret: %s has no password to look for", args[1])
	}
}
