package views

import (
	"io"

	"github.com/sandboxer/sandboxer/plan"
)

// JSONPlan is the Terraform-shaped JSON plan of SPEC §5.
type JSONPlan struct {
	FormatVersion    string       `json:"format_version"`
	SandboxerVersion string       `json:"sandboxer_version"`
	ResourceChanges  []JSONChange `json:"resource_changes"`
	Summary          plan.Summary `json:"summary"`
	// Pools are the warm pools (omitted when there are none).
	Pools   []plan.PoolSummary `json:"pools,omitempty"`
	Errored bool               `json:"errored"`
}

// JSONChange is one entry of resource_changes.
type JSONChange struct {
	Address      string        `json:"address"`
	Type         string        `json:"type"`
	Name         string        `json:"name"`
	Index        *string       `json:"index"`
	Project      string        `json:"project,omitempty"`
	Change       JSONChangeSet `json:"change"`
	ActionReason string        `json:"action_reason"`
	// DataCarried: the replace carries the old instance's data over.
	DataCarried bool `json:"data_carried,omitempty"`
}

// JSONChangeSet carries the actions and the before/after shapes.
type JSONChangeSet struct {
	Actions []string      `json:"actions"`
	Before  *plan.Sandbox `json:"before"`
	After   *plan.Sandbox `json:"after"`
}

// NewJSONPlan converts a plan to its JSON form.
func NewJSONPlan(p *plan.Plan, version string) JSONPlan {
	out := JSONPlan{FormatVersion: "1.0", SandboxerVersion: version,
		ResourceChanges: []JSONChange{}, Summary: p.Summary(), Pools: p.Pools}
	for _, ch := range p.Changes {
		reason := ch.Reason
		if reason == plan.ReasonNone {
			// A destroy plan is a plan against an empty configuration, so
			// tooling that expects a reason on every entry gets no_config.
			reason = plan.ReasonNoConfig
		}
		jc := JSONChange{Address: ch.Addr.String(), Type: "sandbox", Name: ch.Addr.Name,
			Project: ch.Project, ActionReason: string(reason), DataCarried: ch.CarryData,
			Change: JSONChangeSet{Actions: actions(ch.Action), Before: ch.Before, After: ch.After}}
		if ch.Addr.HasKey {
			k := ch.Addr.Key
			jc.Index = &k
		}
		out.ResourceChanges = append(out.ResourceChanges, jc)
	}
	return out
}

func actions(a plan.Action) []string {
	switch a {
	case plan.Create:
		return []string{"create"}
	case plan.CreateThenDelete:
		return []string{"create", "delete"}
	case plan.Delete:
		return []string{"delete"}
	}
	return []string{"no-op"}
}

// PlanJSON writes the plan as one JSON object followed by a newline: what
// a json.Encoder indented by two spaces writes for NewJSONPlan(p, version),
// written directly (plan_json_write.go).
func PlanJSON(w io.Writer, p *plan.Plan, version string) error {
	return writePlanJSON(w, p, version)
}
