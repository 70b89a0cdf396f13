package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/sandboxer/sandboxer/state"
)

// onDemandCmds are the testscript commands of the on-demand scenarios.
func onDemandCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"jsonfield":        cmdJSONField,
		"envof":            cmdEnvOf,
		"envvar":           cmdEnvVar,
		"samecreds":        cmdSameCreds,
		"differentsecrets": cmdDifferentSecrets,
		"waitlabelled":     cmdWaitLabelled,
		"waitfile":         cmdWaitFile,
		"waitgrep":         cmdWaitGrep,
		"api":              cmdAPI,
		"bigjson":          cmdBigJSON,
		"sweeplineage":     cmdSweepLineage,
		"sleep":            cmdSleep,
		"webhook":          cmdWebhook,
	}
}

func readJSON(ts *testscript.TestScript, path string) map[string]any {
	var m map[string]any
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(path)), &m))
	return m
}

// cmdJSONField checks a top-level field of a JSON object file, compared
// as its JSON text (strings unquoted).
//
//	jsonfield FILE FIELD WANT
func cmdJSONField(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 3 {
		ts.Fatalf("usage: jsonfield FILE FIELD WANT")
	}
	v, ok := readJSON(ts, args[0])[args[1]]
	if !ok {
		ts.Fatalf("jsonfield: %s has no field %q", args[0], args[1])
	}
	got := fmt.Sprint(v)
	if b, err := json.Marshal(v); err == nil && !strings.HasPrefix(string(b), `"`) {
		got = string(b)
	}
	if (got == args[2]) == neg {
		ts.Fatalf("jsonfield: %s.%s = %s, want %s%s", args[0], args[1], got, map[bool]string{true: "not ", false: ""}[neg], args[2])
	}
}

// cmdEnvOf writes the "env" object of a request response to a flat env
// JSON file, as `sandboxer env --format json` would, for pgcheck,
// redischeck and nosecrets.
//
//	envof RESPONSEJSON ENVJSON
func cmdEnvOf(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: envof RESPONSEJSON ENVJSON")
	}
	env, ok := readJSON(ts, args[0])["env"].(map[string]any)
	if !ok || len(env) == 0 {
		ts.Fatalf("envof: %s has no env object", args[0])
	}
	b, err := json.Marshal(env)
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), b, 0o600))
}

// cmdEnvVar sets the script's variable VAR to NAME of an env JSON file
// (envof's), for a value a later command takes as an argument (a
// database's name, never a password).
//
//	envvar ENVJSON NAME VAR
func cmdEnvVar(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: envvar ENVJSON NAME VAR")
	}
	var env map[string]string
	ts.Check(json.Unmarshal([]byte(ts.ReadFile(args[0])), &env))
	v, ok := env[args[1]]
	if !ok || strings.Contains(args[1], "PASSWORD") || strings.Contains(args[1], "URL") {
		ts.Fatalf("envvar: %s has no %s, or it holds a secret", args[0], args[1])
	}
	ts.Setenv(args[2], v)
}

// cmdSameCreds checks that request responses carry identical credentials
// and generation, and that exactly one of them provisioned (the rest
// reused).
//
//	samecreds FILE...
func cmdSameCreds(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: samecreds FILE...")
	}
	var first string
	fresh := 0
	for i, a := range args {
		m := readJSON(ts, a)
		b, err := json.Marshal([]any{m["env"], m["generation"], m["address"]})
		ts.Check(err)
		if i == 0 {
			first = string(b)
		} else if string(b) != first {
			ts.Fatalf("samecreds: %s differs from %s in credentials, generation or address", a, args[0])
		}
		if m["reused"] == false {
			fresh++
		}
	}
	if fresh != 1 {
		ts.Fatalf("samecreds: %d responses say they provisioned, want exactly 1", fresh)
	}
	ts.Logf("samecreds: %d responses, identical credentials, one provision", len(args))
}

// labelledAddrs lists the address label of every container and network
// carrying the lineage of the state file.
func labelledAddrs(ts *testscript.TestScript, statePath string) []string {
	var lineage string
	if v, ok := strings.CutPrefix(statePath, "pg:"); ok { // pg:URLVAR, a PostgreSQL state
		lineage = pgLineage(ts, v)
	} else {
		snap, err := state.Open(ts.MkAbs(statePath)).Snapshot(context.Background())
		ts.Check(err)
		lineage = snap.Lineage
	}
	if lineage == "" {
		return nil
	}
	filter := "label=dev.sandboxer.lineage=" + lineage
	var out []string
	for _, argv := range [][]string{
		{"ps", "-a", "--filter", filter, "--format", `{{.Label "dev.sandboxer.address"}}`},
		{"network", "ls", "--filter", filter, "--format", `{{.Label "dev.sandboxer.address"}}`},
	} {
		b, err := exec.Command("docker", argv...).Output()
		ts.Check(err)
		out = append(out, strings.Fields(string(b))...)
	}
	return out
}

// cmdWaitLabelled waits until at least N containers and networks carry the
// state's lineage and the given address.
//
//	waitlabelled STATEFILE ADDR N TIMEOUT
func cmdWaitLabelled(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 4 {
		ts.Fatalf("usage: waitlabelled STATEFILE ADDR N TIMEOUT")
	}
	n, err := strconv.Atoi(args[2])
	ts.Check(err)
	timeout, err := time.ParseDuration(args[3])
	ts.Check(err)
	deadline := time.Now().Add(timeout)
	for {
		got := 0
		if _, err := os.Stat(ts.MkAbs(args[0])); err == nil || strings.HasPrefix(args[0], "pg:") {
			for _, a := range labelledAddrs(ts, args[0]) {
				if a == args[1] {
					got++
				}
			}
		}
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitlabelled: %d resources of %s after %s, want %d", got, args[1], timeout, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cmdWaitFile waits until FILE exists and is not empty.
//
//	waitfile FILE TIMEOUT
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitfile FILE TIMEOUT")
	}
	timeout, err := time.ParseDuration(args[1])
	ts.Check(err)
	deadline := time.Now().Add(timeout)
	for {
		if fi, err := os.Stat(ts.MkAbs(args[0])); err == nil && fi.Size() > 0 {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitfile: %s did not appear within %s", args[0], timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// cmdWaitGrep waits until FILE matches the regular expression.
//
//	waitgrep PATTERN FILE TIMEOUT
func cmdWaitGrep(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: waitgrep PATTERN FILE TIMEOUT")
	}
	re, err := regexp.Compile(args[0])
	ts.Check(err)
	timeout, err := time.ParseDuration(args[2])
	ts.Check(err)
	deadline := time.Now().Add(timeout)
	for {
		if b, err := os.ReadFile(ts.MkAbs(args[1])); err == nil && re.Match(b) {
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waitgrep: %s did not match %q within %s", args[1], args[0], timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// cmdAPI calls the API of a `serve` whose address is in ADDRFILE, with
// the token from $SANDBOXER_API_TOKEN unless -token or -notoken says
// otherwise. It prints "status: N" and the body to stdout. With -bg OUT,
// the call runs in the background and its output goes to OUT when done.
//
// -o FILE also writes the response body alone to FILE.
//
//	api [-token T | -notoken] [-o FILE] [-bg OUT] ADDRFILE METHOD PATH [BODYFILE]
func cmdAPI(ts *testscript.TestScript, neg bool, args []string) {
	token := ts.Getenv("SANDBOXER_API_TOKEN")
	bg, bodyOut := "", ""
	for len(args) > 0 && strings.HasPrefix(args[0], "-") {
		switch args[0] {
		case "-o":
			bodyOut, args = args[1], args[2:]
		case "-token":
			token, args = args[1], args[2:]
		case "-notoken":
			token, args = "", args[1:]
		case "-bg":
			bg, args = args[1], args[2:]
		default:
			ts.Fatalf("api: unknown flag %s", args[0])
		}
	}
	if neg || len(args) < 3 || len(args) > 4 {
		ts.Fatalf("usage: api [-token T | -notoken] [-bg OUT] ADDRFILE METHOD PATH [BODYFILE]")
	}
	url := "http://" + strings.TrimSpace(ts.ReadFile(args[0])) + args[2]
	var body []byte
	if len(args) == 4 {
		var err error
		body, err = os.ReadFile(ts.MkAbs(args[3]))
		ts.Check(err)
	}
	do := func() (string, []byte) {
		req, err := http.NewRequest(args[1], url, bytes.NewReader(body))
		if err != nil {
			return "error: " + err.Error(), nil
		}
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		req.Header.Set("Content-Type", "application/json")
		resp, err := (&http.Client{Timeout: 2 * time.Minute}).Do(req)
		if err != nil {
			return "error: " + err.Error(), nil
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("status: %d\n%s", resp.StatusCode, b), b
	}
	if bg != "" {
		out := ts.MkAbs(bg)
		go func() {
			s, _ := do()
			_ = os.WriteFile(out, []byte(s), 0o600)
		}()
		return
	}
	out, b := do()
	if strings.HasPrefix(out, "error: ") {
		ts.Fatalf("api: %s", out)
	}
	if bodyOut != "" {
		ts.Check(os.WriteFile(ts.MkAbs(bodyOut), b, 0o600))
	}
	fmt.Fprint(ts.Stdout(), out)
}

// cmdBigJSON writes a syntactically valid request body of about N bytes.
//
//	bigjson FILE N
func cmdBigJSON(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: bigjson FILE N")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	body := `{"address":"sandbox.agent","key":"k","ttl":"` + strings.Repeat("1", n) + `h"}`
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(body), 0o600))
}

// cmdSweepLineage removes, when the script ends (pass or fail), every
// container and network labelled with the state's lineage, so a failing
// scenario leaves nothing running.
//
//	sweeplineage STATEFILE
func cmdSweepLineage(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sweeplineage STATEFILE")
	}
	path := ts.MkAbs(args[0])
	ts.Defer(func() {
		snap, err := state.Open(path).Inspect(context.Background()) // damaged records too
		if err != nil || snap.Lineage == "" {
			return
		}
		filter := "label=dev.sandboxer.lineage=" + snap.Lineage
		if ids, err := exec.Command("docker", "ps", "-aq", "--filter", filter).Output(); err == nil && len(bytes.TrimSpace(ids)) > 0 {
			_ = exec.Command("docker", append([]string{"rm", "-fv"}, strings.Fields(string(ids))...)...).Run()
		}
		if ids, err := exec.Command("docker", "network", "ls", "-q", "--filter", filter).Output(); err == nil && len(bytes.TrimSpace(ids)) > 0 {
			_ = exec.Command("docker", append([]string{"network", "rm"}, strings.Fields(string(ids))...)...).Run()
		}
		// Named volumes (a fork's base and its copies' uppers) outlive
		// their containers when a scenario fails midway.
		if ids, err := exec.Command("docker", "volume", "ls", "-q", "--filter", filter).Output(); err == nil && len(bytes.TrimSpace(ids)) > 0 {
			_ = exec.Command("docker", append([]string{"volume", "rm", "-f"}, strings.Fields(string(ids))...)...).Run()
		}
	})
}

// mergeCmds adds extra commands to a testscript command table.
func mergeCmds(extra, cmds map[string]func(ts *testscript.TestScript, neg bool, args []string)) map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	for name, c := range extra {
		if _, dup := cmds[name]; dup {
			panic("duplicate testscript command " + name)
		}
		cmds[name] = c
	}
	return cmds
}

// cmdSleep pauses the script, e.g. to let a ttl run out.
//
//	sleep DURATION
func cmdSleep(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sleep DURATION")
	}
	d, err := time.ParseDuration(args[0])
	ts.Check(err)
	time.Sleep(d)
}

// cmdWebhook starts a local receiver for the rest of the script, sets the
// environment variable VAR to its URL, and appends every body it receives,
// one per line, to OUTFILE.
//
//	webhook VAR OUTFILE
func cmdWebhook(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: webhook VAR OUTFILE")
	}
	out := ts.MkAbs(args[1])
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		f, err := os.OpenFile(out, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		defer f.Close()
		_, _ = f.Write(append(bytes.TrimSpace(b), '\n'))
	}))
	ts.Defer(srv.Close)
	ts.Setenv(args[0], srv.URL)
}

// cmdDifferentSecrets checks two env JSON files (envof's) share no
// password, and that A's PostgreSQL password does not open B's server
// (fork: a copy's credentials are its own).
//
//	differentsecrets A.json B.json
func cmdDifferentSecrets(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: differentsecrets A.json B.json")
	}
	a, b := envFile(ts, args[0]), envFile(ts, args[1])
	for name, v := range a {
		if strings.HasSuffix(name, "_PASSWORD") && v != "" && (b[name] == v) {
			ts.Fatalf("differentsecrets: %s is the same in %s and %s", name, args[0], args[1])
		}
	}
	u, err := url.Parse(b["SANDBOXER_POSTGRES_URL"])
	ts.Check(err)
	u.User = url.UserPassword(u.User.Username(), a["SANDBOXER_POSTGRES_PASSWORD"])
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if conn, err := pgx.Connect(ctx, u.String()); err == nil {
		conn.Close(ctx)
		ts.Fatalf("differentsecrets: %s's password opens %s's server", args[0], args[1])
	}
}
