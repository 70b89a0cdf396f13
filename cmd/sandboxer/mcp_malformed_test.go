package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/internal/testenv"
)

// Malformed input on `sandboxer mcp`'s stdin never ends the session: each
// bad line is answered with the JSON-RPC error the specification names
// and the next valid call works, with the session's sandbox alive
// (--release-on-disconnect would have released it had the session
// ended).
func TestMCPMalformedInput(t *testing.T) {
	testenv.RequireDocker(t)
	dir := t.TempDir()
	writeConfig(t, dir, mcpConfig)
	cleanupLineage(t, dir)
	m := startRawMCP(t, dir, "--release-on-disconnect")
	var sbx api.Sandbox
	if msg := m.tool("request_sandbox", map[string]any{"address": "sandbox.agent"}, &sbx); msg != "" {
		t.Fatal(msg)
	}
	valid := func(when string) {
		t.Helper()
		var list api.SandboxList
		if msg := m.tool("list_sandboxes", map[string]any{}, &list); msg != "" {
			t.Fatalf("%s: list_sandboxes: %s", when, msg)
		}
		if len(list.Sandboxes) != 1 || list.Sandboxes[0].Address != sbx.Address {
			t.Fatalf("%s: list_sandboxes = %+v, want %s alive", when, list, sbx.Address)
		}
	}
	garbage := strings.Repeat("x", 1<<20)
	for _, tt := range []struct {
		name   string
		line   string
		code   int
		wantID string
	}{
		{"truncated", `{"jsonrpc":"2.0","id":900,"method":"tools/call","params":{"name":"list_sand`, -32700, "null"},
		{"not JSON", `hello, server`, -32700, "null"},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":901,"method":"tools/list"}`, -32600, "901"},
		{"empty batch", `[]`, -32600, "null"},
		{"1 MiB of garbage", garbage, -32700, "null"},
		{"id is an object", `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`, -32600, "null"},
		{"a number", `42`, -32600, "null"},
		{"two values on a line", `{"jsonrpc":"2.0","id":902,"method":"tools/list"}}`, -32700, "null"},
	} {
		m.send(tt.line)
		r := m.read(time.Minute)
		if r.Error == nil || r.Error.Code != tt.code || string(r.ID) != tt.wantID {
			b, _ := json.Marshal(r)
			t.Errorf("%s: answer %s, want error %d with id %s", tt.name, b, tt.code, tt.wantID)
		}
		valid("after " + tt.name)
	}

	// Arguments the input schema refuses come back with their code and
	// what the argument must be.
	for _, tt := range []struct {
		args any
		want string
	}{
		{map[string]any{"address": "sandbox.agent", "extensions": "vector"}, `invalid: extensions must be an object of service to feature lists`},
		{map[string]any{"address": "sandbox.agent", "extensions": map[string]any{"postgres": "vector"}}, `invalid: extensions must be an object of service to feature lists`},
		{map[string]any{"key": "k"}, `invalid: address is required`},
		{map[string]any{"address": "sandbox.agent", "colour": "red"}, `invalid: unknown argument "colour"`},
		{map[string]any{"address": 7}, `invalid: address must be a string`},
		{"sandbox.agent", `invalid: the arguments must be a JSON object`},
	} {
		r := m.call("tools/call", map[string]any{"name": "request_sandbox", "arguments": tt.args})
		text := ""
		if r.Result != nil && len(r.Result.Content) > 0 {
			text = r.Result.Content[0].Text
		}
		if r.Result == nil || !r.Result.IsError || !strings.HasPrefix(text, tt.want) {
			b, _ := json.Marshal(r)
			t.Errorf("request_sandbox %v: %s, want a tool error starting %q", tt.args, b, tt.want)
		}
	}
	valid("after refused arguments")

	// A stray "}" on its own line right after a valid call: the call is
	// answered, the "}" too, and the session goes on.
	m.nextID++
	m.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"list_sandboxes","arguments":{}}}`, m.nextID))
	m.send(`}`)
	var codes []string
	for range 2 {
		r := m.read(time.Minute)
		switch {
		case r.Error != nil:
			codes = append(codes, fmt.Sprint(r.Error.Code))
		case string(r.ID) == fmt.Sprint(m.nextID) && r.Result != nil && !r.Result.IsError:
			codes = append(codes, "ok")
		default:
			b, _ := json.Marshal(r)
			codes = append(codes, string(b))
		}
	}
	if got := strings.Join(codes, " "); got != "ok -32700" && got != "-32700 ok" {
		t.Errorf("a valid call and a stray }: answers %s, want ok and -32700", got)
	}
	valid("after a stray }")
	if _, addrs := stateOf(t, dir); len(addrs) != 1 {
		t.Errorf("state holds %v, want the session's sandbox", addrs)
	}
	if strings.Contains(m.log(), sbx.Env["SANDBOXER_POSTGRES_PASSWORD"]) {
		t.Error("the log holds the password")
	}
	m.hangUp()
	if err := m.wait(3 * time.Minute); err != nil {
		t.Errorf("mcp exited with %v", err)
	}
	if _, addrs := stateOf(t, dir); len(addrs) != 0 {
		t.Errorf("after the session ended, state holds %v", addrs)
	}
}
