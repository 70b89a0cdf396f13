// Package valkey is Valkey for every runtime: the server arguments (the
// ACL file, no persistence, the module and debug commands off), the ACL
// file (Redis 7's syntax, which Valkey reads unchanged: the default user
// off, sandboxer's admin, the handed-out user without @admin/@dangerous),
// the module allowlist and arguments, the fail-fast probe, and data
// movement. Valkey speaks the Redis protocol and its DUMP/RESTORE
// format, so the client, ACL rendering, module-command denial and the
// key dump are services/redis's, used here, not copied.
//
// It never calls a container engine or a cluster, and never puts a
// password into an error.
package valkey
