package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	tfjson "github.com/hashicorp/terraform-json"
	"github.com/open-policy-agent/opa/v1/rego"
	"github.com/rogpeppe/go-internal/testscript"
)

// policyCmds read plan JSON as tools written for Terraform's format do,
// and write what the issue 34 scenarios need.
func policyCmds() map[string]func(ts *testscript.TestScript, neg bool, args []string) {
	return map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"policy": cmdPolicy,
		"tfplan": cmdTFPlan,
		// backend blocks (backend_config_postgres.txtar)
		"pgbackendhcl": cmdPgBackendHCL,
		// sandboxer test's JUnit report (test_*.txtar)
		"junit":           cmdJUnit,
		"addresslabelled": cmdAddressLabelled,
	}
}

// policyDir is the corpus of policies written for Terraform plans
// (testdata/policies/README.md), relative to the test's directory.
const policyDir = "testdata/policies"

// cmdPolicy evaluates the policy corpus against a plan JSON file as
// conftest does (package main, deny and warn rules) and prints what it
// finds in conftest's words, sorted:
//
//	policy FILE
//
// It fails when a deny rule fires, as conftest exits 1; `! policy`
// expects one to.
func cmdPolicy(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: policy FILE")
	}
	var input any
	if err := json.Unmarshal([]byte(ts.ReadFile(args[0])), &input); err != nil {
		ts.Fatalf("%s: %v", args[0], err)
	}
	files, err := filepath.Glob(filepath.Join(policyDir, "*.rego"))
	if err != nil || len(files) == 0 {
		ts.Fatalf("no policies in %s (%v)", policyDir, err)
	}
	var modules []func(*rego.Rego)
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			ts.Fatalf("%v", err)
		}
		modules = append(modules, rego.Module(f, string(src)))
	}
	ctx := context.Background()
	eval := func(rule string) []string {
		r := rego.New(append(modules, rego.Query("data.main."+rule), rego.Input(input))...)
		rs, err := r.Eval(ctx)
		if err != nil {
			ts.Fatalf("policy %s: %v", rule, err)
		}
		var msgs []string
		for _, res := range rs {
			for _, ex := range res.Expressions {
				set, ok := ex.Value.([]any)
				if !ok {
					ts.Fatalf("data.main.%s is %T, not a set", rule, ex.Value)
				}
				for _, m := range set {
					msgs = append(msgs, fmt.Sprint(m))
				}
			}
		}
		slices.Sort(msgs)
		return msgs
	}
	warns, denies := eval("warn"), eval("deny")
	name := filepath.Base(args[0])
	for _, m := range warns {
		fmt.Fprintf(ts.Stdout(), "WARN - %s - main - %s\n", name, m)
	}
	for _, m := range denies {
		fmt.Fprintf(ts.Stdout(), "FAIL - %s - main - %s\n", name, m)
	}
	fmt.Fprintf(ts.Stdout(), "%d policies, %d warnings, %d failures\n", len(files), len(warns), len(denies))
	switch {
	case len(denies) > 0 && !neg:
		ts.Fatalf("policy: %d failures", len(denies))
	case len(denies) == 0 && neg:
		ts.Fatalf("policy: no failures")
	}
}

// cmdTFPlan reads a plan JSON file with hashicorp/terraform-json, which
// refuses a format version Terraform's tools do not read and fields of
// the wrong type, checks what Terraform's format promises across its
// sections, and prints each change as Terraform's tools name it:
//
//	tfplan FILE
func cmdTFPlan(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: tfplan FILE")
	}
	var p tfjson.Plan
	if err := json.Unmarshal([]byte(ts.ReadFile(args[0])), &p); err != nil {
		ts.Fatalf("terraform-json: %v", err)
	}
	if err := p.Validate(); err != nil {
		ts.Fatalf("terraform-json: %v", err)
	}
	if p.PlannedValues == nil || p.PlannedValues.RootModule == nil || p.Config == nil || p.Config.RootModule == nil {
		ts.Fatalf("planned_values.root_module or configuration.root_module missing")
	}
	planned := map[string]*tfjson.StateResource{}
	for _, r := range p.PlannedValues.RootModule.Resources {
		planned[r.Address] = r
	}
	prior := map[string]*tfjson.StateResource{}
	if p.PriorState != nil {
		for _, r := range p.PriorState.Values.RootModule.Resources {
			prior[r.Address] = r
		}
	}
	configured := map[string]bool{}
	for _, r := range p.Config.RootModule.Resources {
		if _, ok := p.Config.ProviderConfigs[r.ProviderConfigKey]; !ok {
			ts.Fatalf("%s: provider_config_key %q is not in provider_config", r.Address, r.ProviderConfigKey)
		}
		configured[r.Address] = true
	}
	for _, rc := range p.ResourceChanges {
		c := rc.Change
		if rc.Mode != tfjson.ManagedResourceMode || rc.ProviderName == "" {
			ts.Fatalf("%s: mode %q, provider_name %q", rc.Address, rc.Mode, rc.ProviderName)
		}
		var kind string
		switch {
		case c.Actions.NoOp():
			kind = "no-op"
		case c.Actions.Create():
			kind = "create"
		case c.Actions.Replace():
			kind = "replace"
		case c.Actions.Delete():
			kind = "delete"
		default:
			ts.Fatalf("%s: actions %v are none of Terraform's", rc.Address, c.Actions)
		}
		// Each section agrees with the change: a before is in the prior
		// state, an after is planned, and its block configured.
		if (c.Before != nil) != (prior[rc.Address] != nil) || (c.After != nil) != (planned[rc.Address] != nil) {
			ts.Fatalf("%s: before/after disagree with prior_state/planned_values", rc.Address)
		}
		if c.After != nil && !configured["sandbox."+rc.Name] {
			ts.Fatalf("%s: no configuration for sandbox.%s", rc.Address, rc.Name)
		}
		for what, v := range map[string]any{"before": c.Before, "after": c.After} {
			if m, ok := v.(map[string]any); ok && m["credentials"] != nil {
				ts.Fatalf("%s: credentials in %s", rc.Address, what)
			}
		}
		var masks []string
		for what, v := range map[string]any{"after_unknown": c.AfterUnknown, "before_sensitive": c.BeforeSensitive, "after_sensitive": c.AfterSensitive} {
			if m, ok := v.(map[string]any); ok && m["credentials"] == true {
				masks = append(masks, what)
			}
		}
		slices.Sort(masks)
		index := ""
		if rc.Index != nil {
			index = fmt.Sprintf(" index=%v", rc.Index)
		}
		moved := ""
		if rc.PreviousAddress != "" {
			moved = " moved from " + rc.PreviousAddress
		}
		fmt.Fprintf(ts.Stdout(), "%s: %s%s (%s, %s%s) credentials: %s\n", rc.Address, kind, moved, rc.Type, rc.ProviderName, index, strings.Join(masks, ","))
	}
	// The checks, as Terraform's tools read a check block's results.
	for _, c := range p.Checks {
		if c.Address.Kind != tfjson.CheckKindCheckBlock || len(c.Instances) != 1 {
			ts.Fatalf("%s: kind %q, %d instances; a check block has kind check and one instance", c.Address.ToDisplay, c.Address.Kind, len(c.Instances))
		}
		var msgs []string
		for _, pr := range c.Instances[0].Problems {
			msgs = append(msgs, pr.Message)
		}
		fmt.Fprintf(ts.Stdout(), "%s: %s %q\n", c.Address.ToDisplay, c.Status, msgs)
	}
}

// cmdPgBackendHCL writes a configuration whose sandboxer block names the
// PostgreSQL backend at $VAR without its password, password_env naming
// PWVAR, and sets PWVAR to the password:
//
//	pgbackendhcl VAR FILE PWVAR
func cmdPgBackendHCL(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 3 {
		ts.Fatalf("usage: pgbackendhcl VAR FILE PWVAR")
	}
	u, err := url.Parse(ts.Getenv(args[0]))
	if err != nil || u.User == nil {
		ts.Fatalf("$%s is not a URL with a user", args[0])
	}
	pw, _ := u.User.Password()
	u.User = url.User(u.User.Username())
	src := fmt.Sprintf("sandboxer {\n  backend \"postgres\" {\n    url          = %q\n    password_env = %q\n  }\n}\n\nproject \"p\" {\n  services = [\"postgres\"]\n}\n", u.String(), args[2])
	if err := os.WriteFile(ts.MkAbs(args[1]), []byte(src), 0o644); err != nil {
		ts.Fatalf("%v", err)
	}
	ts.Setenv(args[2], pw)
}
