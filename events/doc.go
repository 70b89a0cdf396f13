// Package events records the lifecycle of on-demand sandboxes: each
// transition (provisioned, reused, replaced, released, extended, expired,
// reaped, failed, snapshotted, restored) becomes one Event handed to a
// Sink. The sinks that write them to a file or POST them to a webhook are
// plumbing, in internal/eventsink.
//
// What this package must never do:
//   - carry credentials: an Event has no field that could hold one, and
//     callers put only addresses, generations and reasons into it;
//   - block the caller: a Sink's Emit must return at once;
//   - keep package-level mutable state.
package events
