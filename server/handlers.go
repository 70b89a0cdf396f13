package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"github.com/sandboxer/sandboxer/ondemand"
	"github.com/sandboxer/sandboxer/views"
)

// requestBody is POST /v1/request's body; release and extend use the
// fields they need.
type requestBody struct {
	Address    string              `json:"address"`
	Key        string              `json:"key"`
	Extensions map[string][]string `json:"extensions"`
	TTL        string              `json:"ttl"`
}

type releaseBody struct {
	Address string `json:"address"`
	Key     string `json:"key"`
}

type extendBody struct {
	Address string `json:"address"`
	Key     string `json:"key"`
	TTL     string `json:"ttl"`
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
}

func (s *Server) request(w http.ResponseWriter, r *http.Request) {
	var body requestBody
	if !decode(w, r, &body) {
		return
	}
	noteAddr(w, body.Address)
	ctx, cancel := s.callContext(r)
	defer cancel()
	res, err := s.broker.Request(ctx, ondemand.Request{
		Address: body.Address, Key: body.Key, Extensions: body.Extensions, TTL: body.TTL})
	if err != nil {
		s.fail(w, err)
		return
	}
	noteAddr(w, res.Address)
	writeJSON(w, http.StatusOK, res)
}

func (s *Server) release(w http.ResponseWriter, r *http.Request) {
	var body releaseBody
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
	writeJSON(w, http.StatusOK, map[string]any{"released": released})
}

func (s *Server) extend(w http.ResponseWriter, r *http.Request) {
	var body extendBody
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
	recs, err := s.broker.List(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	out := make([]views.JSONInstance, 0, len(recs))
	for _, rec := range recs {
		out = append(out, views.NewJSONInstance(rec))
	}
	writeJSON(w, http.StatusOK, map[string]any{"sandboxes": out})
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
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body is larger than %d bytes", MaxBody), nil)
	case errors.Is(err, io.EOF):
		writeError(w, http.StatusBadRequest, "empty request body: send a JSON object", nil)
	default:
		writeError(w, http.StatusBadRequest, "malformed JSON body: "+err.Error(), nil)
	}
	return false
}

// fail maps a broker error to a status. Broker errors never hold
// credentials (providers scrub them), so the message is passed on.
func (s *Server) fail(w http.ResponseWriter, err error) {
	var re *ondemand.Error
	if errors.As(err, &re) {
		status := map[ondemand.Kind]int{
			ondemand.Invalid:    http.StatusBadRequest,
			ondemand.NotFound:   http.StatusNotFound,
			ondemand.NotAllowed: http.StatusUnprocessableEntity,
			ondemand.Busy:       http.StatusConflict,
			ondemand.Conflict:   http.StatusConflict,
			// The request is well formed but cannot be met with these images.
			ondemand.Unavailable: http.StatusUnprocessableEntity,
		}[re.Kind]
		if status == 0 {
			status = http.StatusBadRequest
		}
		writeError(w, status, re.Msg, re.Allowed)
		return
	}
	s.log.Printf("error: %v", err)
	writeError(w, http.StatusInternalServerError, err.Error(), nil)
}
