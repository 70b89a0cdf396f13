package postgres

import "testing"

// A dump with hypertable chunks is recognised from its table of contents
// (a real `pg_restore -l` of a timescaledb sandbox, abridged), so restore
// refuses it with a reason instead of pg_restore's permission error.
func TestHoldsHypertableChunks(t *testing.T) {
	withChunks := `;
; Archive created at 2026-12-01 06:52:10 UTC
;     dbname: app
;
2; 3079 16385 EXTENSION - timescaledb 
233; 1259 16821 TABLE public m app
234; 1259 16830 TABLE _timescaledb_internal _hyper_1_1_chunk app
4300; 0 16830 TABLE DATA _timescaledb_internal _hyper_1_1_chunk app
`
	plain := `;
; Archive created at 2026-12-01 06:52:10 UTC
;     comment: schema _timescaledb_internal is mentioned only here
2; 3079 16385 EXTENSION - vector 
233; 1259 16821 TABLE public items app
`
	if !holdsHypertableChunks(withChunks) {
		t.Error("chunks not found")
	}
	if holdsHypertableChunks(plain) {
		t.Error("chunks found in a dump without any")
	}
}
