package pgstate

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sandboxer/sandboxer/state"
)

var _ state.Importer = (*Backend)(nil)

// Import copies snap into the database in one transaction (see
// state.Importer): the tables are made with snap's lineage when there
// are none; an existing state of the same lineage has its records
// replaced, and its history kept as the backup of this write-set.
func (b *Backend) Import(ctx context.Context, snap *state.Snapshot) error {
	if snap.Lineage == "" {
		return errors.New("import state: the state to copy has no lineage (it is empty)")
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	pool, err := b.db.get(ctx)
	if err != nil {
		return fmt.Errorf("import state: %w", err)
	}
	// Check before creating anything: another lineage is refused with the
	// database untouched.
	var m meta
	var found bool
	if err := inTx(ctx, pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		m, found, err = readMeta(ctx, tx, b.Describe(), false)
		return err
	}); err != nil {
		return fmt.Errorf("import state: %w", b.db.scrub(err))
	}
	if found {
		if err := state.CheckImport(b.Describe(), m.lineage, m.serial, snap); err != nil {
			return err
		}
	} else if err := b.create(ctx, snap.Lineage); err != nil {
		return fmt.Errorf("import state: %w", err)
	}
	existed := found
	err = inTx(ctx, pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		m, found, err := readMeta(ctx, tx, b.Describe(), true)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%s disappeared during the import", b.Describe())
		}
		if err := state.CheckImport(b.Describe(), m.lineage, m.serial, snap); err != nil {
			return err
		}
		b.lineage = m.lineage
		b.keys.UseSalt(m.salt)
		// The records as they were go to history, as for any write-set.
		if _, err := tx.Exec(ctx, `DELETE FROM sandboxer_history`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO sandboxer_history (serial, address, data) SELECT $1, address, data FROM sandboxer_records`, int64(m.serial)+1); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM sandboxer_records`); err != nil {
			return err
		}
		rows := make([][]any, 0, len(snap.Records))
		for addr, rec := range snap.Records {
			data, err := b.codec.Encode(rec)
			if err != nil {
				return err
			}
			rows = append(rows, []any{addr, data})
		}
		if _, err := tx.CopyFrom(ctx, pgx.Identifier{"sandboxer_records"}, []string{"address", "data"}, pgx.CopyFromRows(rows)); err != nil {
			return err
		}
		// Addresses new to this database have no pre-image: absent.
		if _, err := tx.Exec(ctx, `INSERT INTO sandboxer_history (serial, address, data)
			SELECT $1, r.address, NULL FROM sandboxer_records r
			WHERE NOT EXISTS (SELECT 1 FROM sandboxer_history h WHERE h.address = r.address)`, int64(m.serial)+1); err != nil {
			return err
		}
		backup := any(int64(m.serial))
		if !existed {
			backup = nil
		}
		_, err = tx.Exec(ctx, `UPDATE sandboxer_meta SET serial = $1, schema_version = GREATEST(schema_version, $2), backup_serial = $3 WHERE id = 1`,
			int64(snap.Serial), state.SchemaVersion, backup)
		return err
	})
	if err != nil {
		return fmt.Errorf("import state: %w", b.db.scrub(err))
	}
	b.backedUp = true
	return nil
}
