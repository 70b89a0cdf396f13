// Package views renders plans, state and diagnostics for people and tools:
// human text (optionally coloured), Terraform-shaped JSON and markdown for
// pull-request comments. It only formats data it is given; it never decides
// anything, reads state or talks to a provider, and it never prints secrets.
// The JSON plan is written directly (plan_json_write.go) and must stay byte
// for byte what encoding/json's indented encoding of JSONPlan gives; its
// test compares the two.
package views
