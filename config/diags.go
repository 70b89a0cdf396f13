package config

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// errorDiag builds an error diagnostic blamed on subject.
func errorDiag(summary, detail string, subject hcl.Range) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   detail,
		Subject:  subject.Ptr(),
	}
}

// duplicateDiag reports a second block of a kind and name, pointing back at
// the first so the user can pick which one to keep.
func duplicateDiag(kind, name string, prev, this hcl.Range) *hcl.Diagnostic {
	return errorDiag(
		fmt.Sprintf("Duplicate %s block", kind),
		fmt.Sprintf("A %s named %q was already declared at %s. %s names must be unique within a configuration.",
			kind, name, prev, upperFirst(kind)),
		this,
	)
}

// invalidNameDiag reports a block label that cannot be used in references
// and addresses.
func invalidNameDiag(kind, name string, rng hcl.Range) *hcl.Diagnostic {
	return errorDiag(
		fmt.Sprintf("Invalid %s name", kind),
		fmt.Sprintf("%s is not a valid %s name: a name must start with a letter or underscore and may contain only letters, digits, underscores and dashes.", quote(name), kind),
		rng,
	)
}

// catalogDiag turns a catalog check error into a diagnostic. The typed error
// goes into Extra so callers (validate --json) can inspect it with errors.As
// instead of parsing text.
func catalogDiag(err error, rng hcl.Range) *hcl.Diagnostic {
	summary := "Feature not allowed"
	var unknown *UnknownServiceError
	if errors.As(err, &unknown) {
		summary = "Unknown service"
	}
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   err.Error() + ".",
		Subject:  rng.Ptr(),
		Extra:    err,
	}
}

// dedupe drops repeated diagnostics. Sandbox blocks with for_each evaluate
// the same expressions once per instance, which would otherwise report one
// mistake once per key.
func dedupe(diags hcl.Diagnostics) hcl.Diagnostics {
	seen := make(map[string]bool, len(diags))
	out := diags[:0:0]
	for _, d := range diags {
		subj := ""
		if d.Subject != nil {
			subj = d.Subject.String()
		}
		key := fmt.Sprintf("%d\x00%s\x00%s\x00%s", d.Severity, d.Summary, d.Detail, subj)
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, d)
	}
	return out
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
