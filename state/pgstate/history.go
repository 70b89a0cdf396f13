package pgstate

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sandboxer/sandboxer/state"
)

// Backup rebuilds the state as it was before the last write-set: the
// records now, with every address written since then set back to the
// bytes its first write after that point replaced.
func (b *Backend) Backup(ctx context.Context) (*state.Snapshot, error) {
	pool, err := b.db.get(ctx)
	if err != nil {
		return nil, fmt.Errorf("read state backup: %w", err)
	}
	var snap *state.Snapshot
	var raw []rawRecord
	err = inTx(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		m, found, err := readMeta(ctx, tx, b.Describe(), false)
		if err != nil || !found || m.backupSerial == nil {
			return err
		}
		b.keys.UseSalt(m.salt)
		snap = &state.Snapshot{Lineage: m.lineage, Serial: uint64(*m.backupSerial), Records: map[string]*state.Record{}}
		rows, err := tx.Query(ctx, `
			WITH before AS (
				SELECT DISTINCT ON (address) address, data FROM sandboxer_history
				WHERE serial > $1 ORDER BY address, serial, id
			)
			SELECT r.address, r.data FROM sandboxer_records r WHERE r.address NOT IN (SELECT address FROM before)
			UNION ALL
			SELECT address, data FROM before WHERE data IS NOT NULL`, *m.backupSerial)
		if err != nil {
			return err
		}
		raw, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (rawRecord, error) {
			var rr rawRecord
			err := r.Scan(&rr.addr, &rr.data)
			return rr, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read state backup: %w", b.db.scrub(err))
	}
	if snap == nil {
		return nil, nil
	}
	if err := b.decodeInto(snap, raw); err != nil {
		return nil, fmt.Errorf("read state backup: %w", err)
	}
	return snap, nil
}

// Rekey reseals every record and every history row under the current
// key in one transaction (see state.Backend).
func (b *Backend) Rekey(ctx context.Context) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	pool, err := b.db.get(ctx)
	if err != nil {
		return 0, fmt.Errorf("rekey state: %w", err)
	}
	if b.keys.NeedsSalt() {
		if m, err := b.ensure(ctx); err != nil {
			return 0, fmt.Errorf("rekey state: %w", err)
		} else {
			b.keys.UseSalt(m.salt)
		}
	}
	n := 0
	err = inTx(ctx, pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		m, found, err := readMeta(ctx, tx, b.Describe(), true)
		if err != nil || !found {
			return err
		}
		if err := b.checkLineageLocked(m.lineage); err != nil {
			return err
		}
		b.keys.UseSalt(m.salt)
		n, err = b.resealTable(ctx, tx, `SELECT address, data FROM sandboxer_records`,
			`UPDATE sandboxer_records SET data = $2 WHERE address = $1`, false)
		if err != nil {
			return err
		}
		if _, err := b.resealTable(ctx, tx, `SELECT id::text, address, data FROM sandboxer_history WHERE data IS NOT NULL`,
			`UPDATE sandboxer_history SET data = $2 WHERE id = $1::bigint`, true); err != nil {
			return err
		}
		if n > 0 {
			_, err = tx.Exec(ctx, `UPDATE sandboxer_meta SET serial = serial + 1 WHERE id = 1`)
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("rekey state: %w", b.db.scrub(err))
	}
	if n > 0 {
		// The rows as they were stay in the tables' files as dead tuples
		// until vacuumed: rewrite the tables so the old secrets go with
		// them. Best effort (it needs the tables' owner); the rekey
		// itself is done either way.
		_, _ = pool.Exec(ctx, `VACUUM FULL sandboxer_records, sandboxer_history`)
	}
	return n, nil
}

// resealTable rewrites the rows of one query that need resealing;
// withID says the query's first column is a row id before the address.
func (b *Backend) resealTable(ctx context.Context, tx pgx.Tx, query, update string, withID bool) (int, error) {
	type row struct {
		id, addr string
		data     []byte
	}
	rows, err := tx.Query(ctx, query)
	if err != nil {
		return 0, err
	}
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (row, error) {
		var x row
		if withID {
			err := r.Scan(&x.id, &x.addr, &x.data)
			return x, err
		}
		err := r.Scan(&x.addr, &x.data)
		x.id = x.addr
		return x, err
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, x := range all {
		out, changed, err := b.codec.Reseal(x.addr, x.data)
		if err != nil {
			var ke *state.KeyError
			if withID && !errors.As(err, &ke) {
				continue // a damaged old version: leave it
			}
			return 0, err
		}
		if !changed {
			continue
		}
		if _, err := tx.Exec(ctx, update, x.id, out); err != nil {
			return 0, err
		}
		n++
	}
	return n, nil
}
