// Package server is sandboxer's HTTP JSON API for agents (SPEC §8): the
// library's request, release, extend, list, snapshot, restore and reset
// over HTTP, behind a bearer token: the operator's, a tenant's (by its
// SHA-256), or a Kubernetes ServiceAccount token a tenant admits
// (SetServiceAccounts; an API server that cannot say is 503). It takes
// the library through the Library interface it defines.
//
// Routes: POST /v1/request, POST /v1/release, POST /v1/extend,
// GET /v1/sandboxes, POST /v1/snapshot, /v1/restore, /v1/reset,
// /v1/databases, /v1/databases/drop, GET /metrics (Prometheus text, the
// operator's token only; ServeMetrics), GET /v1/dashboard (the
// dashboard's feed; ServeDashboard), and GET /healthz (liveness) and
// /readyz (readiness: the state and the runtimes answer, and shutdown
// has not begun), which need no token, as the dashboard's page and
// assets do not (they carry no data).
//
// What this package must never do: log or echo credentials (only
// /v1/request's response body carries them, to the caller that asked),
// label a metric with an instance key, a tenant or an address,
// show a stack trace (a panicking handler answers a plain 500), read an
// unbounded body, or decide anything about sandboxes itself: it
// translates HTTP to library calls, and the library's error codes
// (sandboxer.Classify) to statuses.
package server
