package main

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/internal/testenv"
)

const mcpSearchConfig = `
provider "docker" {
  image "redis" {
    ref     = "sandboxer.local/redis:7"
    modules = { search = "/usr/lib/redis/modules/redisearch.so" }
  }
}

project "agents" {
  services = ["redis"]
}

sandbox "agent" {
  project   = project.agents
  on_demand = true
  ttl       = "10m"
}
`

// list_features says which API generation the image's search has (read
// from the module the local image loads: RediSearch 1.2 is generation 1)
// and which generations may be asked for; request_sandbox for
// "search@2" is refused with the code of a missing feature, naming what
// the image has, and nothing is created.
func TestMCPSearchGeneration(t *testing.T) {
	testenv.RequireDocker(t)
	dir := t.TempDir()
	writeConfig(t, dir, mcpSearchConfig)
	cleanupLineage(t, dir)
	ctx := context.Background()
	cs, err := mcpClient().Connect(ctx, &mcp.CommandTransport{Command: sandboxerCmd(t, dir, "mcp"), TerminateDuration: time.Minute}, nil)
	if err != nil {
		t.Fatalf("connect over stdio: %v", err)
	}
	defer cs.Close()

	var feats api.FeatureList
	if msg := callTool(t, cs, "list_features", map[string]any{}, &feats); msg != "" {
		t.Fatalf("list_features: %s", msg)
	}
	if len(feats.Services) != 1 {
		t.Fatalf("list_features = %+v, want redis alone", feats)
	}
	sf := feats.Services[0]
	if sf.Provided["search"] != "1.2.0" || sf.Generations["search"] != "1" || !slices.Equal(sf.Generable["search"], []string{"1", "2"}) {
		t.Errorf("list_features redis = %+v; want search 1.2.0 of generation 1, generations 1 and 2 askable", sf)
	}

	msg := callTool(t, cs, "request_sandbox", map[string]any{"address": "sandbox.agent", "extensions": map[string]any{"redis": []string{"search@2"}}}, nil)
	for _, want := range []string{"unavailable", `does not provide "search@2"`, "API generation 1 (version 1.2.0)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("request_sandbox search@2: %q; want it to contain %q", msg, want)
		}
	}
	var list api.SandboxList
	if msg := callTool(t, cs, "list_sandboxes", map[string]any{}, &list); msg != "" || len(list.Sandboxes) != 0 {
		t.Errorf("after the refusal: list_sandboxes %q %+v; want none", msg, list.Sandboxes)
	}
}
