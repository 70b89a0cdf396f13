package views

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/sandboxer/sandboxer/config"
)

// Outputs lists outputs as `name = value`, hiding sensitive values.
func Outputs(w io.Writer, outputs []*config.Output, values map[string]cty.Value) {
	for _, o := range outputs {
		v, ok := values[o.Name]
		if !ok {
			continue
		}
		if o.Sensitive {
			fmt.Fprintf(w, "%s = <sensitive>\n", o.Name)
			continue
		}
		fmt.Fprintf(w, "%s = %s\n", o.Name, HCLValue(v))
	}
}

// HCLValue renders a value as an HCL literal.
func HCLValue(v cty.Value) string {
	if v.IsNull() {
		return "null"
	}
	return strings.TrimSpace(string(hclwrite.TokensForValue(v).Bytes()))
}

// RawValue renders a string as itself and anything else as HCL.
func RawValue(v cty.Value) string {
	if !v.IsNull() && v.Type() == cty.String {
		return v.AsString()
	}
	return HCLValue(v)
}

// JSONOutput is one entry of `output --json`, shaped like Terraform's.
type JSONOutput struct {
	Sensitive bool            `json:"sensitive"`
	Type      json.RawMessage `json:"type"`
	Value     json.RawMessage `json:"value"`
}

// OutputJSON renders one value (with --json and a name) or every output
// as Terraform's `output -json` does; values are shown, sensitive or not.
func OutputJSON(w io.Writer, outputs []*config.Output, values map[string]cty.Value, name string) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if name != "" {
		b, err := ctyjson.Marshal(values[name], values[name].Type())
		if err != nil {
			return err
		}
		return enc.Encode(json.RawMessage(b))
	}
	doc := map[string]JSONOutput{}
	for _, o := range outputs {
		v, ok := values[o.Name]
		if !ok {
			continue
		}
		vb, err := ctyjson.Marshal(v, v.Type())
		if err != nil {
			return fmt.Errorf("output %s: %w", o.Name, err)
		}
		tb, err := ctyjson.MarshalType(v.Type())
		if err != nil {
			return fmt.Errorf("output %s: %w", o.Name, err)
		}
		doc[o.Name] = JSONOutput{Sensitive: o.Sensitive, Type: tb, Value: vb}
	}
	return enc.Encode(doc)
}
