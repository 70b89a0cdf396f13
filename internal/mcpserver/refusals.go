package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/sandboxer/sandboxer/api"
)

// toolInput is a tool's input type, for explaining arguments the SDK's
// schema validation refused; nil for an unknown tool.
func toolInput(tool string) reflect.Type {
	switch tool {
	case "request_sandbox":
		return reflect.TypeFor[requestIn]()
	case "release_sandbox":
		return reflect.TypeFor[addressIn]()
	case "extend_sandbox":
		return reflect.TypeFor[extendIn]()
	case "snapshot_sandbox":
		return reflect.TypeFor[snapshotIn]()
	case "reset_sandbox":
		return reflect.TypeFor[resetIn]()
	case "list_sandboxes", "list_features":
		return reflect.TypeFor[emptyIn]()
	}
	return nil
}

// codedRefusals is the receiving middleware that gives every refused tool
// call its code. The tools' own refusals carry one already (toolError);
// the SDK refuses arguments that do not fit the input schema before a
// tool runs, in its own words ("validating \"arguments\": ..."): those
// become "invalid: " and what the argument must be.
func codedRefusals(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		ctr, ok := res.(*mcp.CallToolResult)
		if err != nil || !ok || !ctr.IsError || method != "tools/call" {
			return res, err
		}
		text := ""
		if len(ctr.Content) == 1 {
			if tc, ok := ctr.Content[0].(*mcp.TextContent); ok {
				text = tc.Text
			}
		}
		if hasCode(text) {
			return res, err
		}
		msg := text
		if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok {
			if why := explainArgs(toolInput(p.Name), p.Arguments); why != "" {
				msg = why
			}
		}
		ctr.Content = []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s: %s", api.CodeInvalid, msg)}}
		return ctr, nil
	}
}

// hasCode reports a refusal that starts with one of the API's codes.
func hasCode(text string) bool {
	code, _, ok := strings.Cut(text, ": ")
	if !ok {
		return false
	}
	switch api.Code(code) {
	case api.CodeInvalid, api.CodeUnauthorized, api.CodeNotFound, api.CodeNotAllowed, api.CodeBusy, api.CodeConflict,
		api.CodeEngineUnreachable, api.CodeTooLarge, api.CodeUnavailable, api.CodeQuotaExceeded, api.CodeRateLimited, api.CodeInternal:
		return true
	}
	return false
}

// explainArgs says what is wrong with raw as arguments of a tool whose
// input is typ, in the words an agent acts on; "" when it cannot tell.
func explainArgs(typ reflect.Type, raw json.RawMessage) string {
	if typ == nil {
		return ""
	}
	var args map[string]json.RawMessage
	if len(raw) == 0 || string(raw) == "null" {
		args = map[string]json.RawMessage{}
	} else if err := json.Unmarshal(raw, &args); err != nil {
		return "the arguments must be a JSON object"
	}
	var known, problems []string
	for i := range typ.NumField() {
		f := typ.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		known = append(known, name)
		v, given := args[name]
		if !given {
			if !strings.Contains(opts, "omitempty") {
				problems = append(problems, name+" is required")
			}
			continue
		}
		if why := fits(name, f.Type, v); why != "" {
			problems = append(problems, why)
		}
	}
	for name := range args {
		if !slices.Contains(known, name) {
			problems = append(problems, fmt.Sprintf("unknown argument %q (allowed: %s)", name, strings.Join(known, ", ")))
		}
	}
	slices.Sort(problems)
	return strings.Join(problems, "; ")
}

// fits says why v is not a value of t, "" when it is.
func fits(name string, t reflect.Type, v json.RawMessage) string {
	switch t.Kind() {
	case reflect.String:
		var s string
		if json.Unmarshal(v, &s) != nil {
			return name + " must be a string"
		}
	case reflect.Bool:
		var b bool
		if json.Unmarshal(v, &b) != nil {
			return name + " must be true or false"
		}
	case reflect.Map:
		var m map[string][]string
		if json.Unmarshal(v, &m) != nil {
			return name + ` must be an object of service to feature lists, e.g. {"postgres": ["vector"]}`
		}
	}
	return ""
}
