package pgstate

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sandboxer/sandboxer/state"
)

// TablesVersion is the version of the table layout this build reads and
// writes. A database with a newer one is refused as a whole.
const TablesVersion = 1

// ddl creates the tables; it is idempotent and runs under an advisory
// transaction lock, so concurrent first writers do not race on it.
const ddl = `
CREATE TABLE IF NOT EXISTS sandboxer_meta (
	id              int PRIMARY KEY CHECK (id = 1),
	lineage         text NOT NULL,
	serial          bigint NOT NULL,
	schema_version  int NOT NULL,
	tables_version  int NOT NULL,
	kdf_salt        bytea NOT NULL,
	backup_serial   bigint
);
CREATE TABLE IF NOT EXISTS sandboxer_records (
	address text PRIMARY KEY,
	data    bytea NOT NULL
);
CREATE TABLE IF NOT EXISTS sandboxer_history (
	id         bigserial PRIMARY KEY,
	serial     bigint NOT NULL,
	address    text NOT NULL,
	data       bytea,
	written_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS sandboxer_history_serial ON sandboxer_history (serial);
CREATE TABLE IF NOT EXISTS sandboxer_locks (
	lock_key bigint PRIMARY KEY,
	address  text NOT NULL,
	info     jsonb NOT NULL
);
`

// meta is the row of sandboxer_meta.
type meta struct {
	lineage      string
	serial       uint64
	schema       int
	tables       int
	salt         []byte
	backupSerial *int64
}

const metaColumns = `lineage, serial, schema_version, tables_version, kdf_salt, backup_serial`

func scanMeta(row pgx.Row) (meta, error) {
	var m meta
	var serial int64
	err := row.Scan(&m.lineage, &serial, &m.schema, &m.tables, &m.salt, &m.backupSerial)
	m.serial = uint64(serial)
	return m, err
}

// check refuses a state a newer sandboxer wrote.
func (m meta) check(where string) error {
	if m.tables > TablesVersion {
		return fmt.Errorf("%s: its tables have layout version %d, made by a newer sandboxer (this one knows up to %d); upgrade sandboxer", where, m.tables, TablesVersion)
	}
	if m.schema > state.SchemaVersion {
		return &state.FutureSchemaError{Backend: where, Version: m.schema, Supported: state.SchemaVersion}
	}
	return nil
}

// isNoTables reports a query on tables that do not exist yet (an empty
// state).
func isNoTables(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "42P01"
}

// ddlLockKey serialises table creation within one database.
const ddlLockKey = 0x73627864646c // "sbxddl"

// createTables makes the tables when they do not exist. They hold no
// state until createState adds the meta row: a lock alone makes tables,
// not a lineage.
func createTables(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(ddlLockKey)); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, ddl)
	return err
}

// createState makes the tables and the meta row when they do not exist;
// lineage "" means a new random one.
func createState(ctx context.Context, tx pgx.Tx, lineage string) error {
	if err := createTables(ctx, tx); err != nil {
		return err
	}
	if lineage == "" {
		lineage = state.NewLineage()
	}
	_, err := tx.Exec(ctx, `INSERT INTO sandboxer_meta (id, `+metaColumns+`) VALUES (1, $1, 0, $2, $3, $4, NULL) ON CONFLICT (id) DO NOTHING`,
		lineage, state.SchemaVersion, TablesVersion, state.NewSalt())
	return err
}
