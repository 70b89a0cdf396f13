package config

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFormat(t *testing.T) {
	canonical := `project "billing" {
  services = ["postgres", "redis"]
  extensions = {
    postgres = ["vector"]
  }
}

sandbox "ci" {
  project  = project.billing
  services = ["postgres"]
}
`
	tests := []struct {
		name    string
		src     string
		want    string
		wantErr string
	}{
		{name: "canonical input is unchanged", src: canonical, want: canonical},
		{
			name: "messy input is canonicalized",
			src: `project   "billing"   {
services=["postgres","redis"]
    extensions={
  postgres=["vector"]
}
}

sandbox "ci" {
project = project.billing
	services    =    ["postgres"]
}
`,
			want: canonical,
		},
		{name: "bad syntax is refused", src: "project \"x\" {\n  services = []\n", wantErr: "Unclosed configuration block"},
		{name: "stray token is refused", src: "project \"x\" }\n", wantErr: "Invalid block definition"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, diags := Format("main.sbx.hcl", []byte(tt.src))
			if tt.wantErr != "" {
				if !diags.HasErrors() || diags[0].Summary != tt.wantErr {
					t.Fatalf("Format diagnostics = %v, want %q", diags, tt.wantErr)
				}
				if diags[0].Subject == nil || diags[0].Subject.Filename != "main.sbx.hcl" {
					t.Errorf("diagnostic subject = %v, want in main.sbx.hcl", diags[0].Subject)
				}
				if got != nil {
					t.Errorf("Format returned output for bad syntax: %q", got)
				}
				return
			}
			if len(diags) > 0 {
				t.Fatalf("unexpected diagnostics: %v", diags)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("Format (-want +got):\n%s", diff)
			}
		})
	}
}
