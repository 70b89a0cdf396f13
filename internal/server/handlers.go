package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"

	"github.com/sandboxer/sandboxer/api"
	"github.com/sandboxer/sandboxer/apply"
	"github.com/sandboxer/sandboxer/internal/views"
	"github.com/sandboxer/sandboxer/ondemand"
)

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, api.Health{Status: "ok"})
}

func (s *Server) request(w http.ResponseWriter, r *http.Request) {
	var body api.RequestBody
	if !decode(w, r, &body) {
		return
	}
	noteAddr(w, body.Address)
	ctx, cancel := s.callContext(r)
	defer cancel()
	res, err := s.broker.Request(ctx, ondemand.Request{
		Address: body.Address, Key: body.Key, Extensions: body.Extensions, TTL: body.TTL,
		Profile: body.Profile, Prefix: body.Prefix, CarryData: body.CarryData})
	if err != nil {
		s.fail(w, err)
		return
	}
	noteAddr(w, res.Address)
	writeJSON(w, http.StatusOK, res.Sandbox)
}

func (s *Server) release(w http.ResponseWriter, r *http.Request) {
	var body api.ReleaseBody
	if !decode(w, r, &body) {
		return
	}
	noteAddr(w, body.Address)
	ctx, cancel := s.callContext(r)
	defer cancel()
	released, err := s.broker.Release(ctx, body.Address, body.Key)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.ReleaseResult{Released: released})
}

func (s *Server) extend(w http.ResponseWriter, r *http.Request) {
	var body api.ExtendBody
	if !decode(w, r, &body) {
		return
	}
	noteAddr(w, body.Address)
	ctx, cancel := s.callContext(r)
	defer cancel()
	rec, err := s.broker.Extend(ctx, body.Address, body.Key, body.TTL)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, views.NewJSONInstance(rec))
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	recs, damaged, err := s.broker.List(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	out := api.SandboxList{Sandboxes: make([]api.Instance, 0, len(recs))}
	for _, rec := range recs {
		out.Sandboxes = append(out.Sandboxes, views.NewJSONInstance(rec))
	}
	for _, addr := range slices.Sorted(maps.Keys(damaged)) {
		out.Damaged = append(out.Damaged, api.DamagedRecord{Address: addr, Error: damaged[addr].Error()})
	}
	writeJSON(w, http.StatusOK, out)
}

// decode reads one JSON object of at most MaxBody bytes, answering 413
// for a larger body and 400 for anything that is not exactly one object
// of known fields.
func decode(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, MaxBody))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		if _, terr := dec.Token(); terr != io.EOF {
			err = errors.New("trailing data after the JSON object")
			var mbe *http.MaxBytesError
			if errors.As(terr, &mbe) {
				err = terr
			}
		}
	}
	var mbe *http.MaxBytesError
	switch {
	case err == nil:
		return true
	case errors.As(err, &mbe):
		writeError(w, http.StatusRequestEntityTooLarge, api.CodeTooLarge, fmt.Sprintf("request body is larger than %d bytes", MaxBody), nil)
	case errors.Is(err, io.EOF):
		writeError(w, http.StatusBadRequest, api.CodeInvalid, "empty request body: send a JSON object", nil)
	default:
		writeError(w, http.StatusBadRequest, api.CodeInvalid, "malformed JSON body: "+err.Error(), nil)
	}
	return false
}

// fail maps a broker error to a status and code. Broker errors never hold
// credentials (providers scrub them), so the message is passed on.
func (s *Server) fail(w http.ResponseWriter, err error) {
	var re *ondemand.Error
	if errors.As(err, &re) {
		code := re.Kind.Code()
		writeError(w, statusOf[code], code, re.Msg, re.Allowed)
		return
	}
	s.log.Error("call failed", "error", err.Error())
	if errors.Is(err, apply.ErrEngine) {
		writeError(w, http.StatusServiceUnavailable, api.CodeEngineUnreachable, err.Error(), nil)
		return
	}
	writeError(w, http.StatusInternalServerError, api.CodeInternal, err.Error(), nil)
}

// statusOf is the HTTP status of each refusal the broker makes.
var statusOf = map[api.Code]int{
	api.CodeInvalid:    http.StatusBadRequest,
	api.CodeNotFound:   http.StatusNotFound,
	api.CodeNotAllowed: http.StatusUnprocessableEntity,
	api.CodeBusy:       http.StatusConflict,
	api.CodeConflict:   http.StatusConflict,
	// Well formed, but these images cannot provide what it asks for.
	api.CodeUnavailable: http.StatusUnprocessableEntity,
}
