package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rogpeppe/go-internal/testscript"

	"github.com/sandboxer/sandboxer/cmd/sandboxer/internal/cli"
	"github.com/sandboxer/sandboxer/internal/testenv"
	"github.com/sandboxer/sandboxer/providers/kubernetes/kubeplugin"
	"github.com/sandboxer/sandboxer/state"
)

func TestMain(m *testing.M) {
	// The redischeck command expects refused dials; go-redis would log each.
	redis.SetLogger(quietRedis{})
	// The scenarios' sandboxes leave PostgreSQL templates; the engine
	// must end as it began (testenv.WithoutNewTemplates).
	testscript.Main(withoutNewTemplates{m}, map[string]func(){
		"sandboxer": func() { os.Exit(cli.Main()) },
		// On the scripts' PATH, where sandboxer finds it (internal/plugin).
		"sandboxer-kubernetes": func() { os.Exit(kubeplugin.Main()) },
	})
}

type withoutNewTemplates struct{ m *testing.M }

func (w withoutNewTemplates) Run() int { return testenv.WithoutNewTemplates(w.m.Run) }

type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

// TestScripts runs the end-to-end CLI scenarios in testdata/script.
// SANDBOXER_UPDATE_GOLDEN=1 rewrites `cmp stdout` golden files in place.
//
// Scenarios that need the engine start with `[!docker] skip`; with
// SANDBOXER_REQUIRE_DOCKER=1 (CI) a missing engine fails the run instead.
func TestScripts(t *testing.T) {
	// One image-inspection cache for the whole run (HOME is /no-home in a
	// script): each image is inspected once, not once per script.
	cache := t.TempDir()
	pgRequired(t)
	noDocker := testenv.DockerUnavailable()
	if noDocker != "" && testenv.Required() {
		t.Fatalf("%s, and %s=1 requires one", noDocker, testenv.RequireEnv)
	}
	kubeconfig, noKube := kubeAvailable()
	if noKube != "" && testenv.KubeRequired() {
		t.Fatalf("%s, and %s=1 requires one", noKube, testenv.KubeRequireEnv)
	}
	runScripts(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       os.Getenv("SANDBOXER_UPDATE_GOLDEN") != "",
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Condition: func(cond string) (bool, error) {
			if cond == "docker" {
				return noDocker == "", nil
			}
			if cond == "kube" {
				return noKube == "", nil
			}
			if cond == "pg" {
				return os.Getenv(testenv.PostgresURLEnv) != "", nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Setup: func(env *testscript.Env) error {
			env.Setenv("NO_COLOR", "")
			env.Setenv("SANDBOXER_CACHE_DIR", cache)
			if kubeconfig != "" {
				env.Setenv("KUBECONFIG", kubeconfig)
			}
			for _, k := range []string{"DOCKER_HOST", "SANDBOXER_TEST_POSTGRES_IMAGE", "SANDBOXER_TEST_REDIS_IMAGE", testenv.PostgresURLEnv} {
				if v := os.Getenv(k); v != "" {
					env.Setenv(k, v)
				}
			}
			return nil
		},
		Cmds: mergeCmds(policyCmds(), mergeCmds(kubeCmds(), mergeCmds(replicaCmds(), mergeCmds(backendCmds(), mergeCmds(reachCmds(), mergeCmds(stateCmds(), mergeCmds(onDemandCmds(), map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"seedstate":   cmdSeedState,
			"agestate":    cmdAgeState,
			"holdlock":    cmdHoldLock,
			"pgcheck":     cmdPgCheck,
			"redischeck":  cmdRedisCheck,
			"valkeycheck": cmdValkeyCheck,
			"mysqlcheck":  cmdMySQLCheck,
			"mariadbcli":  cmdMariaDBCLI,
			"labelled":    cmdLabelled,
			"dockerrm":    cmdDockerRm,
			"saveenv":     cmdSaveEnv,
			"nosecrets":   cmdNoSecrets,
			"capsclaim":   cmdCapsClaim,
		}))))))),
	})
}

// cmdSeedState writes a state record without Docker, for plan scenarios:
//
//	seedstate STATEFILE ADDR [svc=f1,f2 ...] [expired] [gen=N] [creds] [db=NAME]
//
// creds gives every service fixed fake credentials (password
// "s3cr3t-SERVICE'quoted"), for env and secrecy scenarios; db=NAME names
// the postgres database in them (default app).
func cmdSeedState(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: seedstate STATEFILE ADDR [svc=f1,f2 ...] [expired] [gen=N] [creds]")
	}
	rec := &state.Record{Address: args[1], Project: "seeded", Features: map[string][]string{},
		CreatedAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Generation: 1}
	withCreds := false
	database := "app"
	for _, a := range args[2:] {
		switch {
		case strings.HasPrefix(a, "db="):
			database = strings.TrimPrefix(a, "db=")
		case a == "expired":
			rec.ExpiresAt = time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)
		case a == "creds":
			withCreds = true
		case strings.HasPrefix(a, "gen="):
			n, err := strconv.Atoi(strings.TrimPrefix(a, "gen="))
			ts.Check(err)
			rec.Generation = n
		default:
			svc, feats, _ := strings.Cut(a, "=")
			rec.Services = append(rec.Services, svc)
			rec.Features[svc] = []string{}
			if feats != "" {
				rec.Features[svc] = strings.Split(feats, ",")
			}
		}
	}
	if withCreds {
		rec.Credentials = map[string]state.Credentials{}
		for i, svc := range rec.Services {
			c := state.Credentials{Host: "127.0.0.1", Port: 40000 + i, User: "app",
				Password: state.Secret("s3cr3t-" + svc + "'quoted"), AdminUser: "sbx_admin", AdminPassword: "adm1n-secret"}
			if svc == "postgres" {
				c.Database = database
			}
			rec.Credentials[svc] = c
		}
	}
	ts.Check(state.Open(ts.MkAbs(args[0])).Put(context.Background(), rec))
}

// cmdHoldLock takes the state lock for the rest of the script, as another
// sandboxer process would:
//
//	holdlock STATEFILE OPERATION
func cmdHoldLock(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: holdlock STATEFILE OPERATION")
	}
	unlock, err := state.Open(ts.MkAbs(args[0])).Lock(context.Background(), args[1], 0)
	if err != nil {
		ts.Fatalf("holdlock: %v", err)
	}
	ts.Defer(func() {
		if err := unlock(); err != nil {
			fmt.Fprintln(os.Stderr, "unlock:", err)
		}
	})
}
