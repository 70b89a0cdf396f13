// Package eventsink holds the plumbing that delivers lifecycle events
// (package events): a JSON-lines file and a webhook with a bounded
// background queue. The CLI wires them; they are not part of the
// library's API, which takes any events.Sink.
//
// What this package must never do: block the caller (a full webhook queue
// drops and counts), carry credentials, or keep package-level state.
package eventsink
