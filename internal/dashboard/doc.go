// Package dashboard is serve's live dashboard: a page at / (embedded
// HTML, CSS and vanilla JavaScript; its chart is inline SVG, nothing is
// fetched from elsewhere), the JSON feed it polls (GET /v1/dashboard,
// behind the API's bearer token like every other route) and the
// in-memory Recorder of recent events the feed reads its "last events"
// and its latency chart from.
//
// The page itself carries no data: it asks for a token, keeps it in the
// tab's sessionStorage and sends it as "Authorization: Bearer" to the
// feed, so what anyone sees is what their token may see (the operator
// all; a tenant its own instances and events, no pools and nothing that
// shows another tenant's instance exists).
//
// What this package must never do: put a credential (password, URL with
// a password, token or token hash) in the page or the feed (the feed
// carries api.Instance and events.Event, which hold none), serve a
// script, style or anything else from outside the binary, or act on a
// sandbox: it reads the library's list and pool levels and nothing more.
package dashboard
