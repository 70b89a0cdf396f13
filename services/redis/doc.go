// Package redis is Redis for every runtime: the ACL file (the default user
// off, sandboxer's admin, the handed-out user without @admin/@dangerous,
// passwords as SHA-256 hashes), the module arguments (never a module the
// image loads by itself), the fail-fast client and probe, the module
// versions, and the denial of the loaded modules' admin commands.
//
// It never calls a container engine or a cluster, and never puts a
// password into an error.
package redis
