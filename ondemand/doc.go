// Package ondemand is the on-demand broker: it provisions, reuses,
// releases, extends and reaps keyed instances of `on_demand = true`
// sandbox blocks (sandbox.NAME["KEY"]) for `sandboxer request` and the
// HTTP API, on top of config (the template), state (records and locks),
// plan (the cache rule, via plan.Decide — never re-implemented here) and
// apply (the Executor that provisions new before old).
//
// Concurrency contract (SPEC §8 leaves it open; this is the decision):
//
//   - A request, release or extend holds state.LockInstance for its one
//     address from before it reads the record until after it has written
//     it, across the provision. N concurrent requests for one instance
//     therefore make one provision; the others wait, then find the cache
//     hit. Different addresses never wait for each other. The lock is a
//     flock, so one held by a killed process is released by the kernel.
//   - The on-demand path never takes the whole-state lock: plan/apply may
//     run at the same time. State writes are one short bbolt transaction
//     per record, so the two never conflict on the file. apply touches an
//     on-demand instance only to carry out a plan's delete of it (expired,
//     or its block removed), and does so under the same instance lock,
//     refusing when the instance's generation moved on since the plan.
//   - Reap never waits for a lock: it try-locks (timeout 0) each address it
//     is about to change and skips busy ones, so it is safe at any time.
//     See reap.go.
//   - The janitor (janitor.go) runs reap on one process of all those
//     sharing a state: the holder of the janitor lock, an instance lock
//     on an address no sandbox can have. Another takes over within one
//     interval when it dies, at once when it stops.
//
// Holders (hold.go): a "last one out" rule across processes. A session
// (an MCP client) holds what it requests by a lease in the state, taken
// before the request and renewed while it lives; ReleaseUnheld, under the
// instance lock, releases only when no live lease is left (expired, or
// its pid gone on this host, is dead). Reap releases an instance whose
// holders all died when one of them was to release it.
//
// Warm pools (pool.go): a block's pool members are ordinary instances at
// reserved keys (sandbox.NAME["~pool-…"]); a first request the cache rule
// lets a member cover claims it under both instance locks, with fresh
// credentials from the Rotator, and the record moves to the caller's
// address (LabelAddress keeps the member's, which its engine labels
// carry). Reap never calls a resource some record names an orphan.
//
// What this package must never do: print (the CLI and server render its
// results), put credentials into errors or events, or hold a bbolt
// transaction across a provider call (state.Store's calls are each one
// short transaction).
package ondemand
