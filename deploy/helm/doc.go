// Package helm holds no code: it is the home of the Helm chart that runs
// sandboxer serve in a cluster (sandboxer/, see its README.md) and of
// the test that renders it with helm and checks what it makes
// (chart_test.go): a restricted securityContext, the provider's Role
// exactly, Secrets only by reference.
//
// What it must never do: hold secret values, or be imported.
package helm
