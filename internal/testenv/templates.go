package testenv

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/docker/docker/api/types/filters"
	"github.com/docker/docker/api/types/volume"
	"github.com/docker/docker/client"
)

// Labels of the docker provider's PostgreSQL template volumes
// (providers/docker pgtemplate.go), spelled here so that tests of any
// package can find them without importing the provider.
const (
	TemplateLabel     = "dev.sandboxer.template"
	TemplateSaltLabel = "dev.sandboxer.template-test"
)

// WithoutNewTemplates runs the tests (m.Run) and then removes the
// template volumes that appeared meanwhile, but for those a test made
// with a salt of its own (that test removes them): every sandbox's
// PostgreSQL starts from one, and the engine must end as it began. One
// still in use is left (the engine refuses). For TestMain.
func WithoutNewTemplates(run func() int) int {
	before := templateNames()
	code := run()
	if before == nil {
		return code
	}
	cli, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return code
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for name, salted := range templateNames() {
		if _, old := before[name]; !old && !salted {
			if err := cli.VolumeRemove(ctx, name, false); err != nil {
				fmt.Fprintf(os.Stderr, "template volume %s left: %v\n", name, err)
			}
		}
	}
	return code
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
	vs, err := cli.VolumeList(ctx, volume.ListOptions{Filters: filters.NewArgs(filters.Arg("label", TemplateLabel))})
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	for _, v := range vs.Volumes {
		out[v.Name] = v.Labels[TemplateSaltLabel] != ""
	}
	return out
}
