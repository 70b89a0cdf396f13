package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/sandboxer/sandboxer/state"
	"github.com/sandboxer/sandboxer/state/pgstate"
)

// replicaCmds are the script commands for several serve replicas on one
// PostgreSQL state.
func replicaCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"apiflood":       cmdAPIFlood,
		"countevents":    cmdCountEvents,
		"pglineage":      cmdPgLineage,
		"pgsweeplineage": cmdPgSweepLineage,
		"pglabelled":     cmdPgLabelled,
		"pglockholder":   cmdPgLockHolder,
		"killpid":        cmdKillPID,
		"pgagestate":     cmdPgAgeState,
	}
}

// cmdAPIFlood sends N concurrent requests for sandbox.kv keys KEY0 …
// KEY(K-1), spread round-robin over the serve processes whose addresses
// are in ADDRFILEs. Every call must succeed, every key's callers must get
// the same credentials, and exactly one call per key may provision. The
// first response of each key is written to flood-KEY.json.
//
//	apiflood N K PREFIX ADDRFILE...
func cmdAPIFlood(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 4 {
		ts.Fatalf("usage: apiflood N K PREFIX ADDRFILE...")
	}
	n, err := strconv.Atoi(args[0])
	ts.Check(err)
	k, err := strconv.Atoi(args[1])
	ts.Check(err)
	prefix := args[2]
	var addrs []string
	for _, f := range args[3:] {
		addrs = append(addrs, strings.TrimSpace(ts.ReadFile(f)))
	}
	token := ts.Getenv("SANDBOXER_API_TOKEN")
	type result struct {
		key    string
		status int
		body   []byte
		err    error
	}
	results := make([]result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			key := fmt.Sprintf("%s%d", prefix, i%k)
			body, _ := json.Marshal(map[string]string{"address": "sandbox.kv", "key": key})
			req, err := http.NewRequest("POST", "http://"+addrs[i%len(addrs)]+"/v1/request", bytes.NewReader(body))
			if err != nil {
				results[i] = result{key: key, err: err}
				return
			}
			req.Header.Set("Authorization", "Bearer "+token)
			req.Header.Set("Content-Type", "application/json")
			resp, err := (&http.Client{Timeout: 5 * time.Minute}).Do(req)
			if err != nil {
				results[i] = result{key: key, err: err}
				return
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			results[i] = result{key: key, status: resp.StatusCode, body: b}
		})
	}
	wg.Wait()
	creds := map[string]string{}
	fresh := map[string]int{}
	for _, r := range results {
		if r.err != nil || r.status != 200 {
			ts.Fatalf("apiflood: request for %s: status %d, %v: %s", r.key, r.status, r.err, r.body)
		}
		var m struct {
			Reused bool              `json:"reused"`
			Env    map[string]string `json:"env"`
		}
		ts.Check(json.Unmarshal(r.body, &m))
		pw := m.Env["SANDBOXER_REDIS_PASSWORD"]
		if pw == "" {
			ts.Fatalf("apiflood: response for %s has no password", r.key)
		}
		if prev, ok := creds[r.key]; !ok {
			creds[r.key] = pw
			env, _ := json.Marshal(m.Env)
			ts.Check(os.WriteFile(ts.MkAbs("flood-"+r.key+".json"), env, 0o600))
		} else if prev != pw {
			ts.Fatalf("apiflood: callers of %s got different credentials", r.key)
		}
		if !m.Reused {
			fresh[r.key]++
		}
	}
	for key := range creds {
		if fresh[key] != 1 {
			ts.Fatalf("apiflood: %s was provisioned %d times, want once", key, fresh[key])
		}
	}
	if len(creds) != k {
		ts.Fatalf("apiflood: %d keys answered, want %d", len(creds), k)
	}
	fmt.Fprintf(ts.Stdout(), "%d requests, %d keys, %d provisions\n", n, len(creds), len(fresh))
}

// cmdCountEvents checks how many events of TYPE the JSON-lines FILEs
// hold together, and optionally that they come from at least R replicas.
//
//	countevents TYPE N [replicas=R] FILE...
func cmdCountEvents(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 {
		ts.Fatalf("usage: countevents TYPE N [replicas=R] FILE...")
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	files := args[2:]
	minReplicas := 0
	if r, ok := strings.CutPrefix(files[0], "replicas="); ok {
		minReplicas, err = strconv.Atoi(r)
		ts.Check(err)
		files = files[1:]
	}
	got := 0
	replicas := map[string]bool{}
	for _, f := range files {
		for line := range strings.Lines(ts.ReadFile(f)) {
			var e struct {
				Event   string `json:"event"`
				Replica string `json:"replica"`
			}
			if json.Unmarshal([]byte(line), &e) != nil || e.Event != args[0] {
				continue
			}
			got++
			replicas[e.Replica] = true
		}
	}
	if got != want {
		ts.Fatalf("countevents: %d %s events, want %d", got, args[0], want)
	}
	if len(replicas) < minReplicas || replicas[""] && minReplicas > 0 {
		ts.Fatalf("countevents: %s events came from replicas %v, want at least %d named ones", args[0], replicas, minReplicas)
	}
}

func pgLineage(ts *testscript.TestScript, urlVar string) string {
	ctx := context.Background()
	c, err := pgx.Connect(ctx, ts.Getenv(urlVar))
	ts.Check(err)
	defer c.Close(ctx)
	var lineage string
	if err := c.QueryRow(ctx, `SELECT lineage FROM sandboxer_meta WHERE id = 1`).Scan(&lineage); err != nil {
		return ""
	}
	return lineage
}

// cmdPgLineage sets VAR to the lineage of the state in $URLVAR.
//
//	pglineage URLVAR VAR
func cmdPgLineage(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: pglineage URLVAR VAR")
	}
	l := pgLineage(ts, args[0])
	if l == "" {
		ts.Fatalf("pglineage: no state in $%s", args[0])
	}
	ts.Setenv(args[1], l)
}

// cmdPgSweepLineage removes, when the script ends, every engine resource
// labelled with the lineage of the state in $URLVAR.
//
//	pgsweeplineage URLVAR
func cmdPgSweepLineage(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: pgsweeplineage URLVAR")
	}
	ts.Defer(func() {
		l := pgLineage(ts, args[0])
		if l == "" {
			return
		}
		filter := "label=dev.sandboxer.lineage=" + l
		for _, kind := range [][]string{{"ps", "-aq"}, {"network", "ls", "-q"}, {"volume", "ls", "-q"}} {
			out, err := exec.Command("docker", append(kind, "--filter", filter)...).Output()
			if err != nil || len(bytes.TrimSpace(out)) == 0 {
				continue
			}
			rm := map[string][]string{"ps": {"rm", "-fv"}, "network": {"network", "rm"}, "volume": {"volume", "rm", "-f"}}[kind[0]]
			_ = exec.Command("docker", append(rm, strings.Fields(string(out))...)...).Run()
		}
	})
}

// cmdPgLabelled checks how many containers, networks and volumes carry
// the lineage of the state in $URLVAR.
//
//	pglabelled URLVAR N
func cmdPgLabelled(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: pglabelled URLVAR N")
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	l := pgLineage(ts, args[0])
	if l == "" {
		ts.Fatalf("pglabelled: no state in $%s", args[0])
	}
	got := 0
	for _, kind := range [][]string{{"ps", "-aq"}, {"network", "ls", "-q"}, {"volume", "ls", "-q"}} {
		out, err := exec.Command("docker", append(kind, "--filter", "label=dev.sandboxer.lineage="+l)...).Output()
		ts.Check(err)
		got += len(strings.Fields(string(out)))
	}
	if got != want {
		ts.Fatalf("pglabelled: %d resources carry lineage %s, want %d", got, l, want)
	}
}

// cmdPgLockHolder waits until the instance lock of ADDR in $URLVAR is
// held and sets VAR to the holder's pid.
//
//	pglockholder URLVAR ADDR VAR TIMEOUT
func cmdPgLockHolder(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: pglockholder URLVAR ADDR VAR TIMEOUT")
	}
	timeout, err := time.ParseDuration(args[3])
	ts.Check(err)
	ctx := context.Background()
	c, err := pgx.Connect(ctx, ts.Getenv(args[0]))
	ts.Check(err)
	defer c.Close(ctx)
	deadline := time.Now().Add(timeout)
	for {
		var pid int
		err := c.QueryRow(ctx, `SELECT (info->>'pid')::int FROM sandboxer_locks WHERE address = $1`, args[1]).Scan(&pid)
		if err == nil && pid != 0 {
			ts.Setenv(args[2], strconv.Itoa(pid))
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("pglockholder: nobody holds %s after %s", args[1], timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cmdKillPID sends SIGKILL to a process started by this script.
//
//	killpid PID
func cmdKillPID(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: killpid PID")
	}
	pid, err := strconv.Atoi(args[0])
	ts.Check(err)
	if pid == os.Getpid() {
		ts.Fatalf("killpid: that is the test itself")
	}
	ts.Check(syscall.Kill(pid, syscall.SIGKILL))
}

// cmdPgAgeState is agestate for the state in $URLVAR (sealed with the
// script's SANDBOXER_STATE_KEY, if any).
//
//	pgagestate URLVAR ADDR
func cmdPgAgeState(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: pgagestate URLVAR ADDR")
	}
	ctx := context.Background()
	keys, err := state.KeyringFromEnv(ts.Getenv)
	ts.Check(err)
	db := pgstate.NewDB(ts.Getenv(args[0]))
	defer db.Close()
	st := pgstate.Open(db, keys)
	defer st.Close()
	rec, err := st.Get(ctx, args[1])
	ts.Check(err)
	if rec == nil {
		ts.Fatalf("pgagestate: no record %s", args[1])
	}
	rec.ExpiresAt = time.Now().UTC().Add(-time.Second)
	ts.Check(st.Put(ctx, rec))
}
