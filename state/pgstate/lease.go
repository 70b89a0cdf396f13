package pgstate

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/sandboxer/sandboxer/state"
)

// leasesDDL makes the leases table; states made before it get it on
// their first Hold.
const leasesDDL = `
CREATE TABLE IF NOT EXISTS sandboxer_leases (
	address text NOT NULL,
	holder  text NOT NULL,
	host    text NOT NULL,
	pid     int NOT NULL,
	expires timestamptz NOT NULL,
	release boolean NOT NULL,
	PRIMARY KEY (address, holder)
);
`

// Hold records or renews a lease (see state.Leases). It makes the state
// when there is none, as a first Put would; it moves no serial.
func (b *Backend) Hold(ctx context.Context, l state.Lease) error {
	if l.Address == "" || l.Holder == "" {
		return errors.New("hold: a lease needs an address and a holder")
	}
	b.mu.Lock()
	_, err := b.ensure(ctx)
	b.mu.Unlock()
	if err != nil {
		return fmt.Errorf("hold %s: %w", l.Address, err)
	}
	pool, err := b.db.get(ctx)
	if err != nil {
		return err
	}
	upsert := func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO sandboxer_leases (address, holder, host, pid, expires, release)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (address, holder) DO UPDATE SET host = $3, pid = $4, expires = $5, release = $6`,
			l.Address, l.Holder, l.Host, l.PID, l.Expires, l.Release)
		return err
	}
	err = pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{}, upsert)
	if isNoTables(err) {
		err = pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, int64(ddlLockKey)); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, leasesDDL); err != nil {
				return err
			}
			return upsert(tx)
		})
	}
	if err != nil {
		return b.db.scrub(fmt.Errorf("hold %s in %s: %w", l.Address, b.Describe(), err))
	}
	return nil
}

// Unhold drops one lease (see state.Leases).
func (b *Backend) Unhold(ctx context.Context, addr, holder string) error {
	pool, err := b.db.get(ctx)
	if err != nil {
		return err
	}
	_, err = pool.Exec(ctx, `DELETE FROM sandboxer_leases WHERE address = $1 AND holder = $2`, addr, holder)
	if err != nil && !isNoTables(err) {
		return b.db.scrub(fmt.Errorf("unhold %s in %s: %w", addr, b.Describe(), err))
	}
	return nil
}

// HeldBy lists leases (see state.Leases).
func (b *Backend) HeldBy(ctx context.Context, addr string) ([]state.Lease, error) {
	pool, err := b.db.get(ctx)
	if err != nil {
		return nil, err
	}
	rows, err := pool.Query(ctx, `SELECT address, holder, host, pid, expires, release FROM sandboxer_leases
		WHERE $1 = '' OR address = $1 ORDER BY address COLLATE "C", holder COLLATE "C"`, addr)
	if err != nil {
		if isNoTables(err) {
			return nil, nil
		}
		return nil, b.db.scrub(fmt.Errorf("read the leases in %s: %w", b.Describe(), err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (state.Lease, error) {
		var l state.Lease
		err := r.Scan(&l.Address, &l.Holder, &l.Host, &l.PID, &l.Expires, &l.Release)
		return l, err
	})
	if err != nil {
		if isNoTables(err) {
			return nil, nil
		}
		return nil, b.db.scrub(fmt.Errorf("read the leases in %s: %w", b.Describe(), err))
	}
	return out, nil
}
