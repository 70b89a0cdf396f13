package docker

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
)

// TestMain removes the template volumes (pgtemplate.go) this package's
// tests made with providers of their own (no test salt): every sandbox's
// PostgreSQL starts from one, and the engine must end as it began. The
// ones a test made with its own salt are that test's to remove. A
// template still in use (by someone else's sandbox) is left: the engine
// refuses, and nothing of ours uses it any more.
func TestMain(m *testing.M) {
	before := templateNames()
	code := m.Run()
	if before != nil {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation()); err == nil {
			for name, salted := range templateNames() {
				if _, old := before[name]; !old && !salted {
					if err := cli.VolumeRemove(ctx, name, false); err != nil {
						fmt.Fprintf(os.Stderr, "template volume %s left: %v\n", name, err)
					}
				}
			}
			cli.Close()
		}
	}
	os.Exit(code)
}

// templateNames are the template volumes on the engine, name → made with
// a test salt; nil without an engine.
func templateNames() map[string]bool {
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	vs, err := cli.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", LabelTemplate))})
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	for _, v := range vs.Volumes {
		out[v.Name] = v.Labels[labelTemplateSalt] != ""
	}
	return out
}
