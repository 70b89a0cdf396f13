package sandboxer_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/databases"
)

// procsSchema is the template of TestPooledDatabasesAcrossProcesses,
// its own (no other test's pool is taken from).
var procsSchema = []string{`CREATE TABLE procs (id int PRIMARY KEY, who text NOT NULL)`}

// One host's pool taken from by several test processes at once (as `go
// test ./...` runs one per package): no two receive one database or one
// role; the ones ready before they started are taken (the pool is shared
// through the host, not per process); a process killed with SIGKILL
// while holding databases leaves them, and reap drops them with their
// roles, and any clone it was making for the pool; the others' drops
// leave nothing.
func TestPooledDatabasesAcrossProcesses(t *testing.T) {
	if dir := os.Getenv("SBX_POOL_CHILD_DIR"); dir != "" {
		poolChild(dir)
		return
	}
	ctx := context.Background()
	sb, dir := openDatabases(t, nil, "")
	schema := databases.SQL(procsSchema...)
	first, err := sb.Database(ctx, "sandbox.db", sandboxer.DatabaseOptions{Migration: schema}) // the host, the template
	if err != nil {
		t.Fatalf("Database: %v", err)
	}
	if err := sb.DropDatabase(ctx, "sandbox.db", first.Env["SANDBOXER_POSTGRES_DB"]); err != nil {
		t.Fatal(err)
	}
	waitReady(t, sb, 4)
	admin := adminConn(t, sb)
	var tpl string // the host is this test's own: one template
	if err := admin.QueryRow(ctx, `SELECT template FROM sbx_databases WHERE pooled LIMIT 1`).Scan(&tpl); err != nil {
		t.Fatal(err)
	}
	var readyBefore []string
	rows, err := admin.Query(ctx, `SELECT name FROM sbx_databases WHERE pooled AND template = $1`, tpl)
	if err == nil {
		for rows.Next() {
			var n string
			_ = rows.Scan(&n)
			readyBefore = append(readyBefore, n)
		}
		err = rows.Err()
	}
	if err != nil || len(readyBefore) < 4 {
		t.Fatalf("ready databases before the children: %v (%v)", readyBefore, err)
	}

	const procs, each = 4, 6
	type child struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		dbs   []string // name/role pairs as "name role"
		err   error
	}
	children := make([]*child, procs)
	var wg sync.WaitGroup
	for i := range children {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPooledDatabasesAcrossProcesses$")
		cmd.Env = append(os.Environ(), "SBX_POOL_CHILD_DIR="+dir, "SBX_POOL_CHILD_N="+strconv.Itoa(each))
		cmd.Stderr = os.Stderr
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		c := &child{cmd: cmd, stdin: stdin}
		children[i] = c
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(out)
			for sc.Scan() {
				line := strings.TrimSpace(sc.Text())
				if d, ok := strings.CutPrefix(line, "DATABASE "); ok {
					c.dbs = append(c.dbs, d)
				}
				if msg, ok := strings.CutPrefix(line, "FAIL "); ok {
					c.err = fmt.Errorf("child %d: %s", cmd.Process.Pid, msg)
				}
				if line == "READY" {
					go func() { _, _ = io.Copy(io.Discard, out) }()
					return
				}
			}
			c.err = fmt.Errorf("child %d ended before it was ready (%v)", cmd.Process.Pid, sc.Err())
		}()
	}
	wg.Wait()
	names, roles := map[string]int{}, map[string]int{}
	for i, c := range children {
		if c.err != nil {
			t.Fatal(c.err)
		}
		if len(c.dbs) != each {
			t.Fatalf("child %d holds %d databases, want %d", i, len(c.dbs), each)
		}
		for _, d := range c.dbs {
			name, role, _ := strings.Cut(d, " ")
			if j, dup := names[name]; dup {
				t.Fatalf("database %s handed out to child %d and child %d", name, j, i)
			}
			if j, dup := roles[role]; dup {
				t.Fatalf("role %s handed out to child %d and child %d", role, j, i)
			}
			names[name], roles[role] = i, i
			// The lease names the child that holds it, taken out of the pool.
			var pid int
			var pooled bool
			if err := admin.QueryRow(ctx, `SELECT pid, pooled FROM sbx_databases WHERE name = $1`, name).Scan(&pid, &pooled); err != nil || pid != c.cmd.Process.Pid || pooled {
				t.Errorf("lease of %s: pid %d pooled %v (%v), want child %d's pid %d, not pooled", name, pid, pooled, err, i, c.cmd.Process.Pid)
			}
		}
	}
	// The databases ready before the children started are theirs now,
	// handed out or claimed ahead (a process that keeps asking holds a
	// few, prefetch.go): the pool is shared through the host.
	childPids := map[int]bool{}
	for _, c := range children {
		childPids[c.cmd.Process.Pid] = true
	}
	for _, n := range readyBefore {
		var pid int
		var pooled bool
		if err := admin.QueryRow(ctx, `SELECT pid, pooled FROM sbx_databases WHERE name = $1`, n).Scan(&pid, &pooled); err != nil || pooled || !childPids[pid] {
			t.Errorf("%s, ready before the children: pid %d pooled %v (%v), want claimed by a child", n, pid, pooled, err)
		}
	}

	// Child 0 is killed holding its databases; the others drop theirs and
	// end.
	victim := children[0]
	if err := syscall.Kill(victim.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = victim.cmd.Wait()
	for i, c := range children[1:] {
		_ = c.stdin.Close()
		if err := c.cmd.Wait(); err != nil {
			t.Errorf("child %d: %v", i+1, err)
		}
	}
	for _, d := range victim.dbs {
		name, _, _ := strings.Cut(d, " ")
		var exists bool
		if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)`, name).Scan(&exists); err != nil || !exists {
			t.Fatalf("the killed child's database %s before reap: exists %v (%v)", name, exists, err)
		}
	}
	for i, c := range children[1:] {
		for _, d := range c.dbs {
			name, _, _ := strings.Cut(d, " ")
			var exists bool
			if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1) OR EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, name).Scan(&exists); err != nil || exists {
				t.Errorf("child %d dropped %s, yet its database or role exists (%v)", i+1, name, err)
			}
		}
	}

	rep, err := sb.Reap(ctx)
	if err != nil {
		t.Fatalf("Reap: %v", err)
	}
	reaped := map[string]bool{}
	for _, ns := range rep.Databases {
		for _, n := range ns {
			reaped[n] = true
		}
	}
	for _, d := range victim.dbs {
		name, _, _ := strings.Cut(d, " ")
		if !reaped[name] {
			t.Errorf("reap did not report the killed child's %s (reported %v)", name, rep.Databases)
		}
		var exists bool
		if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1) OR EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, name).Scan(&exists); err != nil || exists {
			t.Errorf("after reap, %s's database or role exists (%v)", name, err)
		}
	}
	// Nothing of the killed child is left (a clone it was making
	// included), and every test database on the host has its lease.
	var left, orphans int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM sbx_databases WHERE pid = $1 AND NOT pooled`, victim.cmd.Process.Pid).Scan(&left); err != nil || left != 0 {
		t.Errorf("%d leases of the killed child left after reap (%v)", left, err)
	}
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM pg_database WHERE datname LIKE 'sbxt\_%' AND datname NOT IN (SELECT name FROM sbx_databases)`).Scan(&orphans); err != nil || orphans != 0 {
		t.Errorf("%d test databases without a lease (%v)", orphans, err)
	}
	// The children that ended finished the clones they had under way:
	// what they made for the pool is ready for the next process.
	var pids []int32
	for _, c := range children {
		pids = append(pids, int32(c.cmd.Process.Pid))
	}
	var unready int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM sbx_databases WHERE NOT pooled AND pid = ANY($1)`, pids).Scan(&unready); err != nil || unready != 0 {
		t.Errorf("%d databases of the children neither ready nor dropped after reap (%v)", unready, err)
	}
	// Those claimed ahead and never handed out went back as they were
	// made: no ready database's role can log in or has a password.
	var loginable int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM sbx_databases d JOIN pg_authid r ON r.rolname = d.role
		WHERE d.pooled AND (r.rolcanlogin OR r.rolpassword IS NOT NULL)`).Scan(&loginable); err != nil || loginable != 0 {
		t.Errorf("%d ready databases whose role can log in (%v)", loginable, err)
	}
}

// poolChild takes SBX_POOL_CHILD_N databases from three goroutines,
// checks each logs in as its own role into its own empty database, says
// "DATABASE name role" for each and READY, then holds them until its
// stdin closes, drops them and exits.
func poolChild(dir string) {
	fail := func(err error) {
		fmt.Printf("FAIL %v\n", err)
		os.Exit(1)
	}
	ctx := context.Background()
	sb, err := sandboxer.Open(ctx, dir, sandboxer.Options{CacheDir: filepath.Join(dir, "cache")})
	if err != nil {
		fail(err)
	}
	n, _ := strconv.Atoi(os.Getenv("SBX_POOL_CHILD_N"))
	schema := databases.SQL(procsSchema...)
	jobs := make(chan int, n)
	for i := range n {
		jobs <- i
	}
	close(jobs)
	var mu sync.Mutex
	var held []string
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				d, err := sb.Database(ctx, "sandbox.db", sandboxer.DatabaseOptions{Migration: schema})
				if err != nil {
					fail(err)
				}
				name, role := d.Env["SANDBOXER_POSTGRES_DB"], d.Env["SANDBOXER_POSTGRES_USER"]
				c, err := connectURL(ctx, d.URL("postgres"))
				if err != nil {
					fail(fmt.Errorf("log in to %s: %w", name, err))
				}
				var user, db string
				var rows int
				err = c.QueryRow(ctx, `SELECT current_user, current_database(), (SELECT count(*) FROM procs)`).Scan(&user, &db, &rows)
				if err == nil && (user != role || db != name || rows != 0) {
					err = fmt.Errorf("logged in as %s to %s with %d rows, want %s to an empty %s", user, db, rows, role, name)
				}
				if err == nil {
					_, err = c.Exec(ctx, `INSERT INTO procs VALUES (1, $1)`, strconv.Itoa(os.Getpid()))
				}
				c.Close(ctx)
				if err != nil {
					fail(err)
				}
				mu.Lock()
				held = append(held, name)
				fmt.Printf("DATABASE %s %s\n", name, role)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	fmt.Println("READY")
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, name := range held {
		if err := sb.DropDatabase(ctx, "sandbox.db", name); err != nil {
			fail(err)
		}
	}
	sb.Close()
	// Not back through TestMain: its sweep of new template volumes would
	// take those other processes made meanwhile.
	os.Exit(0)
}

// A process killed with SIGKILL in the middle of a clone it was making
// for the pool (the database made, not yet marked ready) leaves a lease
// in its name that reap drops, with the database and its role: a ready
// clone outlives its maker, a half-made one does not. The clone is held
// half-made by locking its lease row before the maker marks it ready.
func TestHalfMadeCloneOfKilledProcessIsReaped(t *testing.T) {
	if dir := os.Getenv("SBX_CLONE_CHILD_DIR"); dir != "" {
		cloneChild(dir)
		return
	}
	ctx := context.Background()
	sb, dir := openDatabases(t, nil, "")
	// The host and its lease table, before the child runs.
	d, err := sb.Database(ctx, "sandbox.db", sandboxer.DatabaseOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := sb.DropDatabase(ctx, "sandbox.db", d.Env["SANDBOXER_POSTGRES_DB"]); err != nil {
		t.Fatal(err)
	}
	admin := adminConn(t, sb)
	cmd := exec.Command(os.Args[0], "-test.run=^TestHalfMadeCloneOfKilledProcessIsReaped$")
	cmd.Env = append(os.Environ(), "SBX_CLONE_CHILD_DIR="+dir)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	pid := cmd.Process.Pid

	// Catch one of the child's clones between its CREATE DATABASE and
	// its marking ready: lock its lease row, so the marking waits.
	var name string
	locker := adminConn(t, sb)
	for deadline := time.Now().Add(3 * time.Minute); name == ""; {
		if time.Now().After(deadline) {
			t.Fatal("no clone of the child caught half-made in 3 minutes")
		}
		if _, err := locker.Exec(ctx, `BEGIN`); err != nil {
			t.Fatal(err)
		}
		// FOR UPDATE rechecks NOT pooled on the row's latest version;
		// SKIP LOCKED passes over one the child is marking right now.
		err := locker.QueryRow(ctx, `SELECT name FROM sbx_databases d WHERE pid = $1 AND host LIKE 'pool@%' AND NOT pooled
			AND EXISTS (SELECT 1 FROM pg_database WHERE datname = d.name) LIMIT 1 FOR UPDATE SKIP LOCKED`, pid).Scan(&name)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			t.Fatal(err)
		}
		if name == "" {
			if _, err := locker.Exec(ctx, `ROLLBACK`); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if _, err := locker.Exec(ctx, `ROLLBACK`); err != nil {
		t.Fatal(err)
	}
	var pooled, exists bool
	if err := admin.QueryRow(ctx, `SELECT pooled, EXISTS (SELECT 1 FROM pg_database WHERE datname = $1) FROM sbx_databases WHERE name = $1`, name).Scan(&pooled, &exists); err != nil || pooled || !exists {
		t.Fatalf("the half-made clone %s after the kill: pooled %v, database %v (%v); want a database not ready", name, pooled, exists, err)
	}

	rep, err := sb.Reap(ctx)
	if err != nil {
		t.Fatalf("Reap: %v", err)
	}
	found := false
	for _, ns := range rep.Databases {
		found = found || slices.Contains(ns, name)
	}
	if !found {
		t.Errorf("reap did not report the half-made clone %s (reported %v)", name, rep.Databases)
	}
	var left bool
	if err := admin.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1) OR EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)
		OR EXISTS (SELECT 1 FROM sbx_databases WHERE name = $1)`, name).Scan(&left); err != nil || left {
		t.Errorf("after reap, the half-made clone %s's database, role or lease is left (%v)", name, err)
	}
	var unready int
	if err := admin.QueryRow(ctx, `SELECT count(*) FROM sbx_databases WHERE pid = $1 AND NOT pooled`, pid).Scan(&unready); err != nil || unready != 0 {
		t.Errorf("%d leases of the killed child neither ready nor dropped after reap (%v)", unready, err)
	}
}

// cloneChild takes and drops databases until it is killed, so that its
// pool keeps cloning.
func cloneChild(dir string) {
	ctx := context.Background()
	sb, err := sandboxer.Open(ctx, dir, sandboxer.Options{CacheDir: filepath.Join(dir, "cache")})
	if err != nil {
		fmt.Printf("FAIL %v\n", err)
		os.Exit(1)
	}
	schema := databases.SQL(`CREATE TABLE halfmade (id int)`)
	for {
		d, err := sb.Database(ctx, "sandbox.db", sandboxer.DatabaseOptions{Migration: schema})
		if err != nil {
			fmt.Printf("FAIL %v\n", err)
			os.Exit(1)
		}
		_ = sb.DropDatabase(ctx, "sandbox.db", d.Env["SANDBOXER_POSTGRES_DB"])
	}
}
