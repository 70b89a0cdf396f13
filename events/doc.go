// Package events records the lifecycle of on-demand sandboxes: each
// transition (provisioned, reused, replaced, released, extended, expired,
// reaped, failed) becomes one Event, appended as a JSON line to an events
// file and, optionally, POSTed to a webhook.
//
// What this package must never do:
//   - carry credentials: an Event has no field that could hold one, and
//     callers put only addresses, generations and reasons into it;
//   - block the caller: Emit on a Webhook only enqueues into a bounded
//     queue and drops (and counts) what does not fit, so a slow or dead
//     receiver never delays a request;
//   - keep package-level mutable state.
package events
