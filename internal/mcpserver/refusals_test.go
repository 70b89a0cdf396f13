package mcpserver

import (
	"encoding/json"
	"testing"
)

func TestExplainArgs(t *testing.T) {
	typ := toolInput("request_sandbox")
	for _, tt := range []struct{ args, want string }{
		{`{"address":"sandbox.a","extensions":"vector"}`, `extensions must be an object of service to feature lists, e.g. {"postgres": ["vector"]}`},
		{`{}`, `address is required`},
		{`null`, `address is required`},
		{`{"address":"sandbox.a","carry_data":"yes"}`, `carry_data must be true or false`},
		{`{"address":"sandbox.a","ttl":5}`, `ttl must be a string`},
		{`[1]`, `the arguments must be a JSON object`},
		{`{"address":"sandbox.a"}`, ``},
	} {
		if got := explainArgs(typ, json.RawMessage(tt.args)); got != tt.want {
			t.Errorf("explainArgs(%s) = %q, want %q", tt.args, got, tt.want)
		}
	}
	if got := explainArgs(typ, json.RawMessage(`{"address":"sandbox.a","x":1}`)); got == "" || got[:len(`unknown argument "x"`)] != `unknown argument "x"` {
		t.Errorf("unknown argument: %q", got)
	}
}

func TestHasCode(t *testing.T) {
	for text, want := range map[string]bool{
		"invalid: bad key":                   true,
		"unavailable: not ready after 1m0s":  true,
		`validating "arguments": has type x`: false,
		"":                                   false,
		"oops: what":                         false,
	} {
		if got := hasCode(text); got != want {
			t.Errorf("hasCode(%q) = %v", text, got)
		}
	}
}
