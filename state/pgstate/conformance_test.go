package pgstate_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/sandboxer/sandboxer/internal/testenv"
	"github.com/sandboxer/sandboxer/state"
	"github.com/sandboxer/sandboxer/state/pgstate"
	"github.com/sandboxer/sandboxer/state/statetest"
)

// pgState is a state in a schema of its own on the test server.
type pgState struct {
	url string
	db  *pgstate.DB
}

func newPGState(t *testing.T) *pgState {
	u := testenv.PostgresSchema(t)
	db := pgstate.NewDB(u)
	t.Cleanup(db.Close)
	return &pgState{url: u, db: db}
}

func (s *pgState) Open(t *testing.T, keys *state.Keyring) state.Backend {
	b := pgstate.Open(s.db, keys)
	t.Cleanup(func() { b.Close() })
	return b
}

func (s *pgState) conn(t *testing.T) *pgx.Conn {
	t.Helper()
	c, err := pgx.Connect(context.Background(), s.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// Dump is every row of every table of the schema, as text.
func (s *pgState) Dump(t *testing.T) []byte {
	t.Helper()
	c := s.conn(t)
	rows, err := c.Query(context.Background(), `SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema()`)
	if err != nil {
		t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var out []byte
	for _, tbl := range tables {
		// Text and bytea alike: convert_from shows bytea as the text it
		// holds, so a password stored in the clear matches.
		rows, err := c.Query(context.Background(), `SELECT row_to_json(x)::text FROM `+pgx.Identifier{tbl}.Sanitize()+` x`)
		if err != nil {
			t.Fatal(err)
		}
		vals, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range vals {
			out = append(out, v...)
		}
		rows, err = c.Query(context.Background(), `SELECT convert_from(data, 'UTF8') FROM `+pgx.Identifier{tbl}.Sanitize()+` WHERE data IS NOT NULL`)
		if err == nil {
			vals, err := pgx.CollectRows(rows, pgx.RowTo[string])
			if err != nil {
				t.Fatal(err)
			}
			for _, v := range vals {
				out = append(out, v...)
			}
		}
	}
	return out
}

func (s *pgState) Reset(t *testing.T) {
	t.Helper()
	if _, err := s.conn(t).Exec(context.Background(), `DROP TABLE IF EXISTS sandboxer_meta, sandboxer_records, sandboxer_history, sandboxer_leases`); err != nil {
		t.Fatal(err)
	}
}

func TestConformance(t *testing.T) {
	statetest.Run(t, func(t *testing.T) statetest.State { return newPGState(t) })
}
