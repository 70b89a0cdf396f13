// Package mysql is MySQL (served by MariaDB) for every runtime: the init
// script that makes the handed-out user and its database in the official
// image's init phase (from a password hash, so the clear password never
// reaches the server), the grants that leave out every escape route, the
// server settings of a disposable instance (no file import or export, no
// LOCAL INFILE, lean memory), the allowlisted plugins and their check,
// the connection and probe with the handed-out credentials, data dump
// and load given a Runner, and the database per test (testdatabases.go,
// testtemplate.go: a copy of a migrated template's tables and rows per
// test, with a user of its own, leased and reaped).
//
// It never calls a container engine or a cluster, and never puts a
// password into an error or a connection string an error could echo.
package mysql
