// Package testenv decides whether tests that need a Docker engine run,
// skip or fail, in one place for every package: without an engine they
// skip, unless SANDBOXER_REQUIRE_DOCKER=1 (set by CI in .ci/run), where
// a missing engine fails the run instead of turning it silently green.
//
// What this package must never do: create engine resources or be
// imported by non-test code other than the public test helper.
package testenv

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/docker/docker/client"
)

// RequireEnv is the variable that turns a missing engine into a failure.
const RequireEnv = "SANDBOXER_REQUIRE_DOCKER"

// Required reports whether the environment demands the engine.
func Required() bool {
	v := os.Getenv(RequireEnv)
	return v != "" && v != "0" && v != "false"
}

// DockerUnavailable returns why no engine answers (DOCKER_HOST or the
// local socket), or "" when one does.
func DockerUnavailable() string {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return fmt.Sprintf("docker client: %v", err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := cli.Ping(ctx); err != nil {
		return fmt.Sprintf("no Docker engine answers at %s: %v", cli.DaemonHost(), err)
	}
	return ""
}

// RequireDocker skips tb when no engine answers, or fails it when
// SANDBOXER_REQUIRE_DOCKER is set.
func RequireDocker(tb testing.TB) {
	tb.Helper()
	why := DockerUnavailable()
	if why == "" {
		return
	}
	if Required() {
		tb.Fatalf("%s, and %s=1 requires one", why, RequireEnv)
	}
	tb.Skipf("%s (set %s=1 to make this a failure)", why, RequireEnv)
}
