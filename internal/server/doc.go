// Package server is sandboxer's HTTP JSON API for agents (SPEC §8): the
// library's request, release, extend, list, snapshot, restore and reset
// over HTTP, behind a bearer token. It takes the library through the
// Library interface it defines.
//
// Routes: POST /v1/request, POST /v1/release, POST /v1/extend,
// GET /v1/sandboxes, POST /v1/snapshot, /v1/restore, /v1/reset, and
// GET /healthz, the one route without a token besides the dashboard's
// page and assets, which carry no data (ServeDashboard; its feed,
// GET /v1/dashboard, needs a token as every other route does).
//
// What this package must never do: log or echo credentials (only
// /v1/request's response body carries them, to the caller that asked),
// show a stack trace (a panicking handler answers a plain 500), read an
// unbounded body, or decide anything about sandboxes itself: it
// translates HTTP to library calls, and the library's error codes
// (sandboxer.Classify) to statuses.
package server
