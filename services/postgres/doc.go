// Package postgres is PostgreSQL for every runtime: the init script that
// makes the handed-out role, its database and the requested extensions in
// the official image's init phase (from a SCRAM verifier, so the clear
// password never reaches the server), the lean server settings of a
// disposable instance, the connection and probes with the handed-out
// credentials, and the check of the extensions once it answers; and the
// scripts and single-user SQL of template data directories (template.go),
// which set each sandbox's own credentials before its server listens.
//
// It never calls a container engine or a cluster, and never puts a
// password into an error or a connection string an error could echo.
package postgres
