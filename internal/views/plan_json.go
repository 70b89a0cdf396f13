package views

import (
	"io"
	"slices"
	"strings"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/plan"
)

// JSONPlan is the JSON plan of SPEC §5 in Terraform's plan JSON format
// (`terraform show -json`), so policy tools written for Terraform plans
// (conftest, OPA, Atlantis-style summaries) read it unchanged: the
// resource_changes, planned_values, prior_state and configuration
// sections Terraform writes, with a sandbox's services and features where
// Terraform puts a provider's attributes. sandboxer's own fields
// (sandboxer_version, project, action_reason with sandboxer's reasons,
// data_carried, summary, pools, errored) are extensions beside them.
type JSONPlan struct {
	FormatVersion    string       `json:"format_version"`
	SandboxerVersion string       `json:"sandboxer_version"`
	ResourceChanges  []JSONChange `json:"resource_changes"`
	// PlannedValues are the sandboxes as they will be after apply.
	PlannedValues JSONValues `json:"planned_values"`
	// PriorState is the state the plan was made against (omitted when it
	// holds none of the plan's sandboxes, as Terraform omits it).
	PriorState    *JSONPriorState   `json:"prior_state,omitempty"`
	Configuration JSONConfiguration `json:"configuration"`
	// Checks are the check blocks' results, in Terraform's shape
	// (omitted when the configuration has none).
	Checks  []JSONCheck  `json:"checks,omitempty"`
	Summary plan.Summary `json:"summary"`
	// Pools are the warm pools (omitted when there are none).
	Pools   []plan.PoolSummary `json:"pools,omitempty"`
	Errored bool               `json:"errored"`
}

// JSONCheck is one entry of checks: a check block, its status (pass,
// fail, error) and its one instance with the failed assertions'
// messages, as Terraform writes a check block's.
type JSONCheck struct {
	Address   JSONCheckAddress    `json:"address"`
	Status    string              `json:"status"`
	Instances []JSONCheckInstance `json:"instances"`
}

// JSONCheckAddress is a check's static address.
type JSONCheckAddress struct {
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	ToDisplay string `json:"to_display"`
}

// JSONCheckInstance is a check's one instance.
type JSONCheckInstance struct {
	Address  JSONCheckInstanceAddress `json:"address"`
	Status   string                   `json:"status"`
	Problems []JSONCheckProblem       `json:"problems,omitempty"`
}

// JSONCheckInstanceAddress is a check instance's address.
type JSONCheckInstanceAddress struct {
	ToDisplay string `json:"to_display"`
}

// JSONCheckProblem is a failed assertion.
type JSONCheckProblem struct {
	Message string `json:"message"`
}

func checksJSON(cs []plan.CheckResult) []JSONCheck {
	if len(cs) == 0 {
		return nil
	}
	out := make([]JSONCheck, 0, len(cs))
	for _, c := range cs {
		addr := "check." + c.Name
		inst := JSONCheckInstance{Address: JSONCheckInstanceAddress{ToDisplay: addr}, Status: c.Status}
		for _, m := range c.Problems {
			inst.Problems = append(inst.Problems, JSONCheckProblem{Message: m})
		}
		out = append(out, JSONCheck{Address: JSONCheckAddress{Kind: "check", Name: c.Name, ToDisplay: addr},
			Status: c.Status, Instances: []JSONCheckInstance{inst}})
	}
	return out
}

// JSONChange is one entry of resource_changes.
type JSONChange struct {
	Address string `json:"address"`
	// PreviousAddress is where a moved block moves the sandbox from.
	PreviousAddress string `json:"previous_address,omitempty"`
	// Mode is always "managed": sandboxer has no data sources.
	Mode  string  `json:"mode"`
	Type  string  `json:"type"`
	Name  string  `json:"name"`
	Index *string `json:"index"`
	// ProviderName names the runtime the sandbox is on, "sandboxer/docker"
	// or "sandboxer/kubernetes".
	ProviderName string        `json:"provider_name"`
	Project      string        `json:"project,omitempty"`
	Change       JSONChangeSet `json:"change"`
	ActionReason string        `json:"action_reason"`
	// DataCarried: the replace carries the old instance's data over.
	DataCarried bool `json:"data_carried,omitempty"`
}

// JSONChangeSet carries the actions and the before/after shapes, with
// Terraform's masks: which after values apply will decide (after_unknown)
// and which are sensitive (before_sensitive, after_sensitive; false when
// there is no object, as Terraform writes). Credentials are never in
// before or after: they are marked sensitive, and unknown where apply
// generates fresh ones.
type JSONChangeSet struct {
	Actions         []string        `json:"actions"`
	Before          *JSONAttributes `json:"before"`
	After           *JSONAttributes `json:"after"`
	AfterUnknown    JSONMask        `json:"after_unknown"`
	BeforeSensitive JSONMask        `json:"before_sensitive"`
	AfterSensitive  JSONMask        `json:"after_sensitive"`
}

// JSONAttributes are a sandbox's attributes: its shape, and the TTL a
// (re)provisioned or reused sandbox is configured with (omitted when it
// has none).
type JSONAttributes struct {
	*plan.Sandbox
	TTLSeconds int64 `json:"ttl_seconds,omitempty"`
}

// JSONMask is a Terraform mask: false, or an object naming the
// attributes it marks.
type JSONMask struct {
	// Object: the mask is an object (with Credentials or empty), not false.
	Object      bool
	Credentials bool
}

// MarshalJSON writes false, {} or {"credentials": true}.
func (m JSONMask) MarshalJSON() ([]byte, error) {
	switch {
	case !m.Object:
		return []byte("false"), nil
	case m.Credentials:
		return []byte(`{"credentials":true}`), nil
	}
	return []byte("{}"), nil
}

// JSONValues is Terraform's values representation (planned_values, and
// prior_state's values).
type JSONValues struct {
	RootModule JSONModule `json:"root_module"`
}

// JSONModule is the root module's resources.
type JSONModule struct {
	Resources []JSONResource `json:"resources,omitempty"`
}

// JSONResource is one sandbox's values.
type JSONResource struct {
	Address         string          `json:"address"`
	Mode            string          `json:"mode"`
	Type            string          `json:"type"`
	Name            string          `json:"name"`
	Index           *string         `json:"index,omitempty"`
	ProviderName    string          `json:"provider_name"`
	SchemaVersion   int             `json:"schema_version"`
	Values          *JSONAttributes `json:"values"`
	SensitiveValues JSONMask        `json:"sensitive_values"`
}

// JSONPriorState is prior_state.
type JSONPriorState struct {
	FormatVersion string     `json:"format_version"`
	Values        JSONValues `json:"values"`
}

// JSONConfiguration is the configuration section: the sandbox blocks the
// plan's creates, replaces and reuses come from, and the runtimes they
// use as Terraform's providers.
type JSONConfiguration struct {
	ProviderConfig map[string]JSONProviderConfig `json:"provider_config,omitempty"`
	RootModule     JSONConfigModule              `json:"root_module"`
}

// JSONProviderConfig is a runtime as a provider.
type JSONProviderConfig struct {
	Name     string `json:"name"`
	FullName string `json:"full_name"`
}

// JSONConfigModule is the root module's sandbox blocks.
type JSONConfigModule struct {
	Resources []JSONConfigResource `json:"resources,omitempty"`
}

// JSONConfigResource is one sandbox block.
type JSONConfigResource struct {
	Address           string                    `json:"address"`
	Mode              string                    `json:"mode"`
	Type              string                    `json:"type"`
	Name              string                    `json:"name"`
	ProviderConfigKey string                    `json:"provider_config_key"`
	Expressions       map[string]JSONExpression `json:"expressions,omitempty"`
	SchemaVersion     int                       `json:"schema_version"`
	ForEachExpression *JSONExpression           `json:"for_each_expression,omitempty"`
}

// JSONExpression is an expression as Terraform describes it.
type JSONExpression struct {
	References []string `json:"references,omitempty"`
}

// providerName is a change's runtime as Terraform's provider_name.
func providerName(runtime string) string { return "sandboxer/" + runtime }

// changeRuntime is the runtime a change's sandbox is (or was) on.
func changeRuntime(ch *plan.Change) string {
	if ch.After != nil {
		return ch.After.RuntimeName()
	}
	if ch.Before != nil {
		return ch.Before.RuntimeName()
	}
	return config.RuntimeDocker
}

// attributes are a shape with a change's TTL (after only).
func attributes(sb *plan.Sandbox, ch *plan.Change, after bool) *JSONAttributes {
	if sb == nil {
		return nil
	}
	a := &JSONAttributes{Sandbox: sb}
	if after {
		a.TTLSeconds = int64(ch.TTL.Seconds())
	}
	return a
}

// afterUnknown: apply generates credentials for a create or a replace.
func afterUnknown(ch *plan.Change) JSONMask {
	fresh := ch.After != nil && (ch.Action == plan.Create || ch.Action == plan.CreateThenDelete)
	return JSONMask{Object: true, Credentials: fresh}
}

// sensitive marks an object's credentials; false when there is none.
func sensitive(sb *plan.Sandbox) JSONMask {
	return JSONMask{Object: sb != nil, Credentials: sb != nil}
}

// NewJSONPlan converts a plan to its JSON form.
func NewJSONPlan(p *plan.Plan, version string) JSONPlan {
	out := JSONPlan{FormatVersion: "1.0", SandboxerVersion: version,
		ResourceChanges: []JSONChange{}, Summary: p.Summary(), Pools: p.Pools,
		Configuration: configuration(p), Checks: checksJSON(p.Checks)}
	var prior JSONModule
	for _, ch := range p.Changes {
		reason := ch.Reason
		if reason == plan.ReasonNone {
			// A destroy plan is a plan against an empty configuration, so
			// tooling that expects a reason on every entry gets no_config.
			reason = plan.ReasonNoConfig
		}
		var index *string
		if ch.Addr.HasKey {
			k := ch.Addr.Key
			index = &k
		}
		provider := providerName(changeRuntime(ch))
		jc := JSONChange{Address: ch.Addr.String(), PreviousAddress: ch.PrevAddr, Mode: "managed", Type: "sandbox", Name: ch.Addr.Name,
			Index: index, ProviderName: provider,
			Project: ch.Project, ActionReason: string(reason), DataCarried: ch.CarryData,
			Change: JSONChangeSet{Actions: actions(ch.Action),
				Before: attributes(ch.Before, ch, false), After: attributes(ch.After, ch, true),
				AfterUnknown: afterUnknown(ch), BeforeSensitive: sensitive(ch.Before), AfterSensitive: sensitive(ch.After)}}
		out.ResourceChanges = append(out.ResourceChanges, jc)
		res := JSONResource{Address: jc.Address, Mode: "managed", Type: "sandbox", Name: ch.Addr.Name,
			Index: index, ProviderName: provider}
		if ch.After != nil {
			r := res
			r.Values, r.SensitiveValues = jc.Change.After, sensitive(ch.After)
			out.PlannedValues.RootModule.Resources = append(out.PlannedValues.RootModule.Resources, r)
		}
		if ch.Before != nil {
			r := res
			r.Values, r.SensitiveValues = jc.Change.Before, sensitive(ch.Before)
			prior.Resources = append(prior.Resources, r)
		}
	}
	if len(prior.Resources) > 0 {
		out.PriorState = &JSONPriorState{FormatVersion: "1.0", Values: JSONValues{RootModule: prior}}
	}
	return out
}

// configuration describes the sandbox blocks behind the plan's changes
// that have an after (a delete's block is gone from the configuration),
// one per block, in address order, with the runtimes they use.
func configuration(p *plan.Plan) JSONConfiguration {
	var c JSONConfiguration
	for _, ch := range p.Changes {
		if ch.After == nil {
			continue
		}
		rt := ch.After.RuntimeName()
		if c.ProviderConfig == nil {
			c.ProviderConfig = map[string]JSONProviderConfig{}
		}
		c.ProviderConfig[rt] = JSONProviderConfig{Name: rt, FullName: providerName(rt)}
		addr := "sandbox." + ch.Addr.Name
		if slices.ContainsFunc(c.RootModule.Resources, func(r JSONConfigResource) bool { return r.Address == addr }) {
			continue
		}
		r := JSONConfigResource{Address: addr, Mode: "managed", Type: "sandbox", Name: ch.Addr.Name, ProviderConfigKey: rt}
		if ch.Project != "" {
			r.Expressions = map[string]JSONExpression{"project": {References: []string{"project." + ch.Project}}}
		}
		if ch.Addr.HasKey {
			r.ForEachExpression = &JSONExpression{}
		}
		c.RootModule.Resources = append(c.RootModule.Resources, r)
	}
	slices.SortFunc(c.RootModule.Resources, func(a, b JSONConfigResource) int { return strings.Compare(a.Address, b.Address) })
	return c
}

func actions(a plan.Action) []string {
	switch a {
	case plan.Create:
		return []string{"create"}
	case plan.CreateThenDelete:
		return []string{"create", "delete"}
	case plan.Delete:
		return []string{"delete"}
	case plan.Forget:
		return []string{"forget"} // Terraform's, for a removed block that does not destroy
	}
	return []string{"no-op"}
}

// PlanJSON writes the plan as one JSON object followed by a newline: what
// a json.Encoder indented by two spaces writes for NewJSONPlan(p, version),
// written directly (plan_json_write.go).
func PlanJSON(w io.Writer, p *plan.Plan, version string) error {
	return writePlanJSON(w, p, version)
}
