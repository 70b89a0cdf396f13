// Package api holds the wire shapes of sandboxer's HTTP API (SPEC §8):
// the request and response bodies of every route, the error body and the
// error kinds a call can be refused with. The server (package server) and
// the Go client (package apiclient) both use these types, so the JSON
// shape of each route is written down once.
//
// What this package must never do: import anything beyond the standard
// library (a client pulls it in without the engine), or hold behaviour
// beyond small conversions. Sandbox.Env is the only field that ever
// carries credentials.
package api
