// Package docker provisions sandbox instances on a Docker engine: one bridge
// network per instance and one container per service (PostgreSQL, Redis),
// each ready only once a real protocol probe with the handed-out credentials
// succeeds. It implements apply.Provider.
//
// Everything it creates carries dev.sandboxer.* labels naming the address,
// state lineage and generation; the labels, not the ids kept in state, are
// the source of truth after a crash (ListManaged, DeleteManaged).
//
// What this package must never do:
//   - pull or build images during Create (Check may try a pull, at plan time);
//   - publish a port on anything but 127.0.0.1, run a container privileged or
//     without no-new-privileges, or create anonymous volumes;
//   - start a container anywhere but on its instance's own network (they are
//     created on the default bridge and moved before start; network.go);
//   - hand out a superuser (PostgreSQL) or a Redis user that can load
//     modules, change configuration or run debug commands;
//   - put a password in an error, a log line, a label, a container name, an
//     environment variable or on a command line (secrets reach containers
//     as files copied in before start; see files.go);
//   - decide readiness by counting log lines;
//   - remove anything that does not carry its labels.
package docker
