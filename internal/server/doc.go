// Package server is sandboxer's HTTP JSON API for agents (SPEC §8): the
// on-demand broker's request, release, extend and list over HTTP, behind
// a bearer token.
//
// Routes: POST /v1/request, POST /v1/release, POST /v1/extend,
// GET /v1/sandboxes, and GET /healthz (the only one without a token).
//
// What this package must never do: log or echo credentials (only
// /v1/request's response body carries them, to the caller that asked),
// show a stack trace (a panicking handler answers a plain 500), read an
// unbounded body, or decide anything about sandboxes itself: it
// translates HTTP to the broker and errors back to status codes.
package server
