package config

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecodeTestFile(t *testing.T) {
	src := `
variables {
  ttl = "4h"
}

run "first" {
  command = plan
  variables {
    reviews = ["a", "b"]
  }
  assert {
    condition     = plan.create == 2
    error_message = "two"
  }
  expect_failures = [check.short, var.ttl]
}

run "second" {}
`
	tf, diags := DecodeTestFile("x.sbtest.hcl", []byte(src))
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	var got []string
	for _, v := range tf.Variables {
		got = append(got, fmt.Sprintf("file var %s=%s at %s", v.Name, v.Value.GoString(), v.Range))
	}
	for _, r := range tf.Runs {
		got = append(got, fmt.Sprintf("run %s %s asserts=%d", r.Name, r.Command, len(r.Asserts)))
		for _, v := range r.Variables {
			got = append(got, fmt.Sprintf("  var %s", v.Name))
		}
		for _, e := range r.ExpectFailures {
			got = append(got, fmt.Sprintf("  expect %s at %s", e.Addr(), e.Range))
		}
	}
	want := []string{
		`file var ttl=cty.StringVal("4h") at x.sbtest.hcl:3,9-13`,
		"run first plan asserts=1",
		"  var reviews",
		"  expect check.short at x.sbtest.hcl:15,22-33",
		"  expect var.ttl at x.sbtest.hcl:15,35-42",
		"run second apply asserts=0",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decoded (-want +got):\n%s", diff)
	}
}

// Each bad input is one located error.
func TestDecodeTestFileErrors(t *testing.T) {
	for _, tc := range []struct {
		src, summary, at string
	}{
		{`run "a" { command = destroy }`, "Invalid run command", "x.sbtest.hcl:1,21-28"},
		{`run "a" { command = "plan" }`, "Invalid run command", "x.sbtest.hcl:1,21-27"},
		{"run \"a\" {}\nrun \"a\" {}", "Duplicate run block", "x.sbtest.hcl:2,1-8"},
		{`run "1a" {}`, "Invalid run name", "x.sbtest.hcl:1,5-9"},
		{`run "a" { expect_failures = [sandbox.db] }`, "Invalid expect_failures entry", "x.sbtest.hcl:1,30-40"},
		{`run "a" { expect_failures = [check] }`, "Invalid expect_failures entry", "x.sbtest.hcl:1,30-35"},
		{"run \"a\" {\n  variables {\n    x = var.y\n  }\n}", "Variables not allowed", "x.sbtest.hcl:3,9-12"},
		{"variables {}\nvariables {}", "Duplicate variables block", "x.sbtest.hcl:2,1-10"},
		{"run \"a\" {\n  assert {\n    condition = true\n  }\n}", "Missing required argument", "x.sbtest.hcl:2,10-10"},
		{`resource "x" "y" {}`, "Unsupported block type", "x.sbtest.hcl:1,1-9"},
	} {
		_, diags := DecodeTestFile("x.sbtest.hcl", []byte(tc.src))
		if len(diags) != 1 || diags[0].Summary != tc.summary || diags[0].Subject == nil || diags[0].Subject.String() != tc.at {
			t.Errorf("%q: got %v, want one %q at %s", tc.src, diags, tc.summary, tc.at)
		}
	}
}
