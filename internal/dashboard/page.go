package dashboard

import (
	"embed"
	"encoding/json"
	"net/http"

	"github.com/sandboxer/sandboxer/api"
)

// The page: an HTML shell, its script and its style, all in the binary.
//
//go:embed web/index.html web/app.js web/app.css web/icon.svg
var web embed.FS

// The routes of the page: the shell at / and its assets. None
// carries data, so none needs a token; the data comes from PathFeed.
const (
	PathPage   = "/"
	PathScript = "/dashboard/app.js"
	PathStyle  = "/dashboard/app.css"
	PathIcon   = "/dashboard/icon.svg"
)

// csp lets the page load only its own script and style and talk only to
// its own server; no inline script, no frames, no form submission (the
// token form is handled by the script, and must never end up in a URL).
const csp = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; " +
	"base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

type asset struct {
	file, contentType string
}

var assets = map[string]asset{
	PathPage:   {"web/index.html", "text/html; charset=utf-8"},
	PathScript: {"web/app.js", "text/javascript; charset=utf-8"},
	PathStyle:  {"web/app.css", "text/css; charset=utf-8"},
	PathIcon:   {"web/icon.svg", "image/svg+xml"},
}

// Page serves the shell and its assets (GET PathPage, PathScript,
// PathStyle and PathIcon); any other path is a 404 in the API's JSON
// shape.
func Page() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a, ok := assets[r.URL.Path]
		var body []byte
		if ok {
			var err error
			if body, err = web.ReadFile(a.file); err != nil {
				ok = false
			}
		}
		h := w.Header()
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-store")
		if !ok {
			h.Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			_ = json.NewEncoder(w).Encode(api.ErrorBody{Error: "no route " + r.URL.Path, Code: api.CodeNotFound})
			return
		}
		h.Set("Content-Type", a.contentType)
		h.Set("Content-Security-Policy", csp)
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Cross-Origin-Opener-Policy", "same-origin")
		_, _ = w.Write(body)
	})
}
