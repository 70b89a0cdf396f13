package server

import (
	"context"
	"errors"
	"net/http"
	"strings"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/snapshot"
)

// Data is what the data endpoints serve; *snapshot.Manager implements it.
type Data interface {
	Snapshot(ctx context.Context, addr, name string) (*snapshot.Outcome, error)
	Restore(ctx context.Context, addr, name string) (*snapshot.Outcome, error)
	Reset(ctx context.Context, addr, name string) (*snapshot.Outcome, error)
}

// ServeData adds POST /v1/snapshot, /v1/restore and /v1/reset. Call it
// before serving.
func (s *Server) ServeData(d Data) {
	s.mux.Handle("POST "+api.PathSnapshot, s.authed(s.dataCall(d.Snapshot, true)))
	s.mux.Handle("POST "+api.PathRestore, s.authed(s.dataCall(d.Restore, true)))
	s.mux.Handle("POST "+api.PathReset, s.authed(s.dataCall(d.Reset, false)))
}

func (s *Server) dataCall(op func(ctx context.Context, addr, name string) (*snapshot.Outcome, error), needName bool) http.HandlerFunc {
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
		if body.Snapshot != "" {
			if err := snapshot.CheckName(body.Snapshot); err != nil {
				writeError(w, http.StatusBadRequest, api.CodeInvalid, err.Error(), nil)
				return
			}
		}
		noteAddr(w, addr.String())
		ctx, cancel := s.callContext(r)
		defer cancel()
		out, err := op(ctx, addr.String(), body.Snapshot)
		if err != nil {
			s.dataFail(w, err)
			return
		}
		writeJSON(w, http.StatusOK, api.DataResult{Address: out.Address, Generation: out.Generation,
			Snapshot: out.Snapshot, Services: out.Services, Size: out.Size, ElapsedMS: out.ElapsedMS})
	}
}

// dataFail maps the refusals of a data call; anything else goes the way
// of every other error.
func (s *Server) dataFail(w http.ResponseWriter, err error) {
	var mf *snapshot.MissingFeatureError
	var ce *snapshot.ChecksumError
	switch {
	case errors.Is(err, snapshot.ErrNotFound), errors.Is(err, snapshot.ErrNotProvisioned):
		writeError(w, http.StatusNotFound, api.CodeNotFound, err.Error(), nil)
	case errors.As(err, &mf):
		writeError(w, http.StatusUnprocessableEntity, api.CodeUnavailable, err.Error(), nil)
	case errors.As(err, &ce):
		writeError(w, http.StatusConflict, api.CodeConflict, err.Error(), nil)
	case errors.Is(err, snapshot.ErrExists):
		writeError(w, http.StatusConflict, api.CodeConflict, err.Error(), nil)
	default:
		s.fail(w, err)
	}
}
