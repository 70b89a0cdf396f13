// Package kit is what every runtime (providers/docker,
// providers/kubernetes) does the same way, written once: the clients' CA
// files, the rule that names an instance's objects, the cache of what
// images provide. A runtime places processes; whatever does not depend on
// how it places them belongs here.
//
// What it must never do: import a runtime, a container engine's or a
// cluster's client library, or know a service by name (ask
// services.Service).
package kit
