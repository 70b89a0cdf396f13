// Package fake is an in-memory sandbox provider for tests that must run
// without a Docker engine: it hands out well-formed credentials, answers
// probes while an instance "lives", and forgets instances on Delete or
// Kill. It passes the same conformance suite (providers/providertest) as
// the Docker provider, so code written against apply.Provider behaves the
// same on both.
//
// What this package must never do: pretend to be a database. The
// credentials it hands out point nowhere; tests that talk PostgreSQL or
// Redis need the Docker provider and a real engine.
package fake
