package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/sandboxer/sandboxer/cmd/sandboxer/internal/cli"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
)

// envFile reads a `sandboxer env --format json` document.
func envFile(ts *testscript.TestScript, path string) map[string]string {
	b, err := os.ReadFile(ts.MkAbs(path))
	ts.Check(err)
	var env map[string]string
	ts.Check(json.Unmarshal(b, &env))
	return env
}

// expect turns an outcome into a script failure, honouring `!`.
func expect(ts *testscript.TestScript, name string, neg bool, err error) {
	switch {
	case err != nil && !neg:
		ts.Fatalf("%s: %v", name, err)
	case err == nil && neg:
		ts.Fatalf("%s: unexpectedly succeeded", name)
	case err != nil:
		ts.Logf("%s failed as expected: %v", name, err)
	}
}

// cmdPgCheck connects with SANDBOXER_POSTGRES_URL from an env JSON file
// and runs SELECT 1, then any further SQL given; `! pgcheck` expects the
// connection or a statement to fail.
//
//	pgcheck ENVJSON [SQL...]
func cmdPgCheck(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: pgcheck ENVJSON [SQL...]")
	}
	url := envFile(ts, args[0])["SANDBOXER_POSTGRES_URL"]
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := func() error {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		for _, sql := range append([]string{"SELECT 1"}, args[1:]...) {
			if _, err := conn.Exec(ctx, sql); err != nil {
				return err
			}
		}
		return nil
	}()
	expect(ts, "pgcheck", neg, err)
}

// cmdRedisCheck authenticates with SANDBOXER_REDIS_URL and PINGs, then
// runs any further command given (words separated by spaces).
//
//	redischeck ENVJSON [CMD...]
func cmdRedisCheck(ts *testscript.TestScript, neg bool, args []string) {
	redisProtocolCheck(ts, neg, "redis", args)
}

// cmdValkeyCheck is redischeck for the valkey service (its URL is in
// the Redis scheme; go-redis speaks to it).
//
//	valkeycheck ENVJSON [CMD...]
func cmdValkeyCheck(ts *testscript.TestScript, neg bool, args []string) {
	redisProtocolCheck(ts, neg, "valkey", args)
}

func redisProtocolCheck(ts *testscript.TestScript, neg bool, service string, args []string) {
	if len(args) < 1 {
		ts.Fatalf("usage: %scheck ENVJSON [CMD...]", service)
	}
	env := envFile(ts, args[0])
	opts, err := redis.ParseURL(env["SANDBOXER_"+strings.ToUpper(service)+"_URL"])
	ts.Check(err)
	if pool := caPool(ts, env, service); pool != nil && opts.TLSConfig != nil {
		opts.TLSConfig.RootCAs = pool // rediss://: trust the sandbox's CA
	}
	opts.MaxRetries = -1
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	client := redis.NewClient(opts)
	defer client.Close()
	err = client.Ping(ctx).Err()
	for _, c := range args[1:] {
		if err != nil {
			break
		}
		var words []any
		for _, w := range strings.Fields(c) {
			words = append(words, w)
		}
		err = client.Do(ctx, words...).Err()
	}
	expect(ts, service+"check", neg, err)
}

// cmdLabelled asserts how many containers, networks and volumes carry the state
// file's lineage label.
//
//	labelled STATEFILE N
func cmdLabelled(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: labelled STATEFILE N")
	}
	want, err := strconv.Atoi(args[1])
	ts.Check(err)
	snap, err := state.Open(ts.MkAbs(args[0])).Snapshot(context.Background())
	ts.Check(err)
	if snap.Lineage == "" {
		ts.Fatalf("labelled: %s has no lineage yet", args[0])
	}
	filter := "label=dev.sandboxer.lineage=" + snap.Lineage
	got := 0
	var counts []string
	for _, argv := range [][]string{
		{"ps", "-aq", "--filter", filter},
		{"network", "ls", "-q", "--filter", filter},
		{"volume", "ls", "-q", "--filter", filter},
	} {
		out, err := exec.Command("docker", argv...).Output()
		ts.Check(err)
		n := len(strings.Fields(string(out)))
		got += n
		counts = append(counts, fmt.Sprintf("%d %s", n, argv[0]))
	}
	if got != want {
		ts.Fatalf("labelled: %d containers, networks and volumes (%s) carry lineage %s, want %d", got, strings.Join(counts, ", "), snap.Lineage, want)
	}
	// A volume named as the lineage's but without its labels (the engine
	// forgot them: a removal that failed half-way) is a leftover no reap
	// finds.
	if h := strings.ReplaceAll(snap.Lineage, "-", ""); len(h) >= 12 {
		named, err := exec.Command("docker", "volume", "ls", "-q", "--filter", "name=sbx-"+h[:12]+"-").Output()
		ts.Check(err)
		labelled, err := exec.Command("docker", "volume", "ls", "-q", "--filter", filter).Output()
		ts.Check(err)
		for _, v := range strings.Fields(string(named)) {
			if !slices.Contains(strings.Fields(string(labelled)), v) {
				ts.Fatalf("labelled: volume %s is named as lineage %s's but does not carry its labels", v, snap.Lineage)
			}
		}
	}
}

// cmdDockerRm force-removes the container of one service of an instance,
// as a user cleaning up by hand would.
//
//	dockerrm STATEFILE ADDR SERVICE
func cmdDockerRm(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: dockerrm STATEFILE ADDR SERVICE")
	}
	rec, err := state.Open(ts.MkAbs(args[0])).Get(context.Background(), args[1])
	ts.Check(err)
	if rec == nil {
		ts.Fatalf("dockerrm: %s not in state", args[1])
	}
	id := rec.Resources.Containers[args[2]]
	if id == "" {
		ts.Fatalf("dockerrm: %s has no %s container", args[1], args[2])
	}
	out, err := exec.Command("docker", "rm", "-f", id).CombinedOutput()
	if err != nil {
		ts.Fatalf("dockerrm: %v: %s", err, out)
	}
}

// cmdSaveEnv runs `sandboxer env ADDR --format json` in-process and writes
// the result to FILE, so credentials never reach the script's log.
//
//	saveenv ADDR FILE
func cmdSaveEnv(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: saveenv ADDR FILE")
	}
	var out, errb bytes.Buffer
	f := &cli.Factory{
		IO:      cli.IOStreams{In: strings.NewReader(""), Out: &out, Err: &errb},
		Now:     time.Now,
		Catalog: config.DefaultCatalog(),
		Global:  cli.GlobalOptions{Chdir: ts.MkAbs(".")},
	}
	// The script's state key and backend, so a sealed state opens.
	for _, k := range []string{state.EnvStateKey, state.EnvStateKeyFile, cli.EnvBackendURL} {
		if v := ts.Getenv(k); v != "" {
			f.Environ = append(f.Environ, k+"="+v)
		}
	}
	if code := cli.Run(context.Background(), f, []string{"--chdir", ts.MkAbs("."), "env", args[0], "--format", "json"}); code != 0 {
		ts.Fatalf("saveenv: exit %d: %s", code, errb.String())
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), out.Bytes(), 0o600))
}

// cmdNoSecrets fails if the last command's stdout or stderr contains any
// password or URL from an env JSON file.
//
//	nosecrets ENVJSON
func cmdNoSecrets(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: nosecrets ENVJSON")
	}
	out := ts.ReadFile("stdout") + ts.ReadFile("stderr")
	for name, v := range envFile(ts, args[0]) {
		if strings.HasSuffix(name, "_PASSWORD") || strings.HasSuffix(name, "_URL") {
			if strings.Contains(out, v) {
				ts.Fatalf("nosecrets: the last command printed the value of %s", name)
			}
		}
	}
}
