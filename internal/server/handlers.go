package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/api"
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
	sbx, err := s.lib.Request(ctx, body.Address, sandboxer.RequestOptions{
		Key: body.Key, Extensions: body.Extensions, TTL: body.TTL,
		Profile: body.Profile, Prefix: body.Prefix, CarryData: body.CarryData, ReadyTimeout: body.ReadyTimeout})
	if err != nil {
		s.fail(w, err)
		return
	}
	noteAddr(w, sbx.Address)
	writeJSON(w, http.StatusOK, sbx)
}

func (s *Server) release(w http.ResponseWriter, r *http.Request) {
	var body api.ReleaseBody
	if !decode(w, r, &body) {
		return
	}
	noteAddr(w, body.Address)
	ctx, cancel := s.callContext(r)
	defer cancel()
	released, err := s.lib.Release(ctx, body.Address, body.Key)
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
	in, err := s.lib.Extend(ctx, body.Address, body.Key, body.TTL)
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, in)
}

// fork serves POST /v1/fork.
func (s *Server) fork(w http.ResponseWriter, r *http.Request) {
	var body api.ForkBody
	if !decode(w, r, &body) {
		return
	}
	noteAddr(w, body.Address)
	ctx, cancel := s.callContext(r)
	defer cancel()
	out, err := s.lib.Fork(ctx, body.Address, sandboxer.ForkOptions{Key: body.Key, Count: body.Count, ToKey: body.ToKey, TTL: body.TTL})
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	out, err := s.lib.Sandboxes(r.Context())
	if err != nil {
		s.fail(w, err)
		return
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

// fail answers a library error with its code's status. Library errors
// never hold credentials (providers scrub them), so the message is passed
// on; one without a code is logged and answered 500.
func (s *Server) fail(w http.ResponseWriter, err error) {
	e := sandboxer.Classify(err)
	if s.metrics != nil {
		s.metrics.failed(e.Code)
	}
	status, ok := statusOf[e.Code]
	if !ok {
		status = http.StatusInternalServerError
		s.log.Error("call failed", "error", err.Error())
	}
	writeError(w, status, e.Code, e.Message, e.Allowed)
}

// statusOf is the HTTP status of each code; the API client turns it back
// into the same code.
var statusOf = map[api.Code]int{
	api.CodeInvalid:    http.StatusBadRequest,
	api.CodeNotFound:   http.StatusNotFound,
	api.CodeNotAllowed: http.StatusUnprocessableEntity,
	api.CodeBusy:       http.StatusConflict,
	api.CodeConflict:   http.StatusConflict,
	// Well formed, but these images cannot provide what it asks for.
	api.CodeUnavailable:       http.StatusUnprocessableEntity,
	api.CodeEngineUnreachable: http.StatusServiceUnavailable,
	// The caller's own quota; its message names the limit and the use.
	api.CodeQuotaExceeded: http.StatusForbidden,
	api.CodeRateLimited:   http.StatusTooManyRequests,
}
