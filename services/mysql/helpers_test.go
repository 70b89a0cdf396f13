package mysql

import (
	"context"
	"os/exec"
)

func execDocker(ctx context.Context, args ...string) ([]byte, error) {
	return exec.CommandContext(ctx, "docker", args...).CombinedOutput()
}
