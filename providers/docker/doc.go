// Package docker provisions sandbox instances on a Docker engine: one bridge
// network per state lineage, shared by its instances with inter-container
// traffic off, and one container per service (PostgreSQL, Redis),
// each ready only once a real protocol probe with the handed-out credentials
// succeeds. It implements apply.Provider.
//
// Everything it creates carries dev.sandboxer.* labels naming the address,
// state lineage and generation; the labels, not the ids kept in state, are
// the source of truth after a crash (ListManaged, DeleteManaged).
//
// Each service runs the image the plan chose (apply.CreateRequest.Images):
// the configured one, or with none configured a default image picked for
// the features (config.DefaultImages). What differs between images is read
// from them and cached with their capabilities (capabilities.go): the
// service user that owns copied files (serviceuser.go), the modules the
// image loads by itself, where its data directory and VOLUMEs lie.
//
// Every service but PostgreSQL starts as services.Service's Start says
// (start.go) and is checked by its Ready; what this runtime does as the
// Kubernetes runtime does is in providers/internal/kit.
//
// PostgreSQL starts from a template data directory (pgtemplate.go): a
// labelled volume per image ID and initialisation settings, made once by
// the image's own entrypoint in a throwaway container and copied into
// each sandbox's volume or tmpfs, where single-user mode sets the
// sandbox's own credentials before the server listens. Templates belong
// to no lineage; CollectTemplates (reap) removes the unused ones.
//
// What this package must never do:
//   - pull or build images during Create (Check may try a pull, at plan time);
//   - start an image that is neither the configured one nor, when none is
//     configured, a default image (a saved plan names the image);
//   - assume a service uid, or load a module the image already loads;
//   - publish a port on anything but the configured publish address
//     (127.0.0.1 by default), run a container privileged or without
//     no-new-privileges, or create a volume without its labels;
//   - start a container anywhere but on its lineage's network (and the user
//     networks its configuration names), or make that network without the
//     lineage's engine lock: the engine lets two networks share a name, and
//     containers join theirs by name (network.go, enginelock.go);
//   - give two states' resources the same name: names carry 12 characters
//     of the lineage (names.go);
//   - hand out a superuser (PostgreSQL) or a Redis user that can load
//     modules, change configuration or run debug commands;
//   - put a password in an error, a log line, a label, a container name, an
//     environment variable or on a command line (secrets reach containers
//     as files copied in before start; see files.go);
//   - decide readiness by counting log lines;
//   - start a server on a template whose marker is missing or wrong, or
//     let a template hold a usable credential;
//   - remove anything that does not carry its labels.
package docker
