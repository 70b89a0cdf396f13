package server

import (
	"net/http"
	"time"

	"github.com/sandboxer/sandboxer"
	"github.com/sandboxer/sandboxer/api"
)

// database serves POST /v1/databases: a fresh database per test.
func (s *Server) database(w http.ResponseWriter, r *http.Request) {
	var body api.DatabaseBody
	if !decode(w, r, &body) {
		return
	}
	noteAddr(w, body.Address)
	var ttl time.Duration
	if body.TTL != "" {
		d, err := time.ParseDuration(body.TTL)
		if err != nil || d <= 0 {
			writeError(w, http.StatusBadRequest, api.CodeInvalid, "ttl: want a positive duration such as 30m", nil)
			return
		}
		ttl = d
	}
	ctx, cancel := s.callContext(r)
	defer cancel()
	sbx, err := s.lib.Database(ctx, body.Address, sandboxer.DatabaseOptions{SQL: body.SQL, CreateDB: body.CreateDB, TTL: ttl, Prefix: body.Prefix, Remote: true})
	if err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, sbx)
}

// dropDatabase serves POST /v1/databases/drop.
func (s *Server) dropDatabase(w http.ResponseWriter, r *http.Request) {
	var body api.DropDatabaseBody
	if !decode(w, r, &body) {
		return
	}
	noteAddr(w, body.Address)
	ctx, cancel := s.callContext(r)
	defer cancel()
	if err := s.lib.DropDatabase(ctx, body.Address, body.Name); err != nil {
		s.fail(w, err)
		return
	}
	writeJSON(w, http.StatusOK, api.DropDatabaseResult{Dropped: true})
}
