package server

import (
	"context"
	"net/http"
	"strings"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/config"
)

// dataCall serves POST /v1/snapshot, /v1/restore and /v1/reset.
func (s *Server) dataCall(op func(ctx context.Context, addr, name string) (*api.DataResult, error), needName bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var body api.DataBody
		if !decode(w, r, &body) {
			return
		}
		noteAddr(w, body.Address)
		addr, err := config.ParseAddress(strings.TrimSpace(body.Address))
		if err != nil {
			writeError(w, http.StatusBadRequest, api.CodeInvalid, err.Error(), nil)
			return
		}
		if body.Key != "" {
			if addr.HasKey {
				writeError(w, http.StatusBadRequest, api.CodeInvalid, "give the key in the address or in \"key\", not both", nil)
				return
			}
			addr = config.Address{Name: addr.Name, Key: body.Key, HasKey: true}
		}
		if needName && body.Snapshot == "" {
			writeError(w, http.StatusBadRequest, api.CodeInvalid, "\"snapshot\" (the snapshot's name) is required", nil)
			return
		}
		noteAddr(w, addr.String())
		ctx, cancel := s.callContext(r)
		defer cancel()
		out, err := op(ctx, addr.String(), body.Snapshot)
		if err != nil {
			s.fail(w, err)
			return
		}
		writeJSON(w, http.StatusOK, out)
	}
}
