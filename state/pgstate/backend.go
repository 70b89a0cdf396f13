package pgstate

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/sandboxer/sandboxer/state"
)

// Backend is a state in one PostgreSQL database (see the package doc).
// Like state.Store, use one value per command: it remembers the first
// lineage it saw and starts its backup at its first write. It is safe for
// concurrent use.
type Backend struct {
	db    *DB
	keys  *state.Keyring
	codec state.Codec
	locks *locker
	// ownsDB: Close closes db too (OpenURL).
	ownsDB bool

	mu       sync.Mutex // guards the fields below; held across a write
	lineage  string
	backedUp bool
	// kept counts the history rows this write-set added: a long-lived
	// value (serve) starts a new write-set after maxHistory of them, so
	// history stays bounded (its Backup then starts later).
	kept int
}

// maxHistory bounds the history rows of one write-set.
const maxHistory = 10_000

var _ state.Backend = (*Backend)(nil)

// Open returns a Backend on db, sealing with keys (nil: in the clear).
func Open(db *DB, keys *state.Keyring) *Backend {
	b := &Backend{db: db, keys: keys, codec: state.Codec{Where: db.Describe(), Keys: keys}}
	b.locks = &locker{db: db, where: db.Describe()}
	return b
}

// OpenURL is Open on a pool of its own, which Close closes too.
func OpenURL(url string, keys *state.Keyring) *Backend {
	b := Open(NewDB(url), keys)
	b.ownsDB = true
	return b
}

// Describe names the database without its password.
func (b *Backend) Describe() string { return b.db.Describe() }

// Close releases this value's dedicated lock connection (and so any lock
// still held). The shared pool stays open, unless OpenURL made it.
func (b *Backend) Close() error {
	err := b.locks.close()
	if b.ownsDB {
		b.db.Close()
	}
	return err
}

func (b *Backend) observe(lineage string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.lineage == "" {
		b.lineage = lineage
	}
}

func (b *Backend) checkLineageLocked(got string) error {
	if b.lineage == "" {
		b.lineage = got
		return nil
	}
	if got != b.lineage {
		return &state.LineageError{Backend: b.Describe(), Want: b.lineage, Got: got}
	}
	return nil
}

// errNoTables ends a transaction that found no tables: the state is
// empty. Callers turn it into found = false once the transaction is over.
var errNoTables = errors.New("no state tables")

// inTx runs fn in a transaction; errNoTables from it is no error. A
// transaction PostgreSQL ended as a deadlock victim or a serialization
// failure (40P01, 40001: concurrent first writers creating the tables,
// say) was rolled back whole, so fn runs again, a few times, after a
// short random pause; fn changes nothing outside the transaction until
// its last statement succeeded.
func inTx(ctx context.Context, db interface {
	BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error)
}, opts pgx.TxOptions, fn func(pgx.Tx) error) error {
	var err error
	for attempt := 1; ; attempt++ {
		err = pgx.BeginTxFunc(ctx, db, opts, fn)
		if attempt == txAttempts || !isRetryableTx(err) || ctx.Err() != nil {
			break
		}
		t := time.NewTimer(time.Duration(1+mrand.IntN(20*attempt)) * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
	if errors.Is(err, errNoTables) {
		return nil
	}
	return err
}

// txAttempts bounds inTx's runs of one transaction.
const txAttempts = 5

func isRetryableTx(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

// readMeta reads the meta row; found is false for a database without the
// row, and errNoTables for one without the tables.
func readMeta(ctx context.Context, q pgx.Tx, where string, forUpdate bool) (m meta, found bool, err error) {
	sql := `SELECT ` + metaColumns + ` FROM sandboxer_meta WHERE id = 1`
	if forUpdate {
		sql += ` FOR UPDATE`
	}
	m, err = scanMeta(q.QueryRow(ctx, sql))
	switch {
	case isNoTables(err):
		// The transaction is aborted now: end it, and read as empty.
		return meta{}, false, errNoTables
	case errors.Is(err, pgx.ErrNoRows):
		return meta{}, false, nil
	case err != nil:
		return meta{}, false, err
	}
	return m, true, m.check(where)
}

// Get reads one record in one query (meta and record together).
func (b *Backend) Get(ctx context.Context, addr string) (*state.Record, error) {
	pool, err := b.db.get(ctx)
	if err != nil {
		return nil, fmt.Errorf("read %s from state: %w", addr, err)
	}
	var m meta
	var serial int64
	var data []byte
	err = pool.QueryRow(ctx, `SELECT m.lineage, m.serial, m.schema_version, m.tables_version, m.kdf_salt, m.backup_serial, r.data
		FROM sandboxer_meta m LEFT JOIN sandboxer_records r ON r.address = $1 WHERE m.id = 1`, addr).
		Scan(&m.lineage, &serial, &m.schema, &m.tables, &m.salt, &m.backupSerial, &data)
	switch {
	case isNoTables(err), errors.Is(err, pgx.ErrNoRows):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read %s from state: %w", addr, b.db.scrub(err))
	}
	if err := m.check(b.Describe()); err != nil {
		return nil, fmt.Errorf("read %s from state: %w", addr, err)
	}
	b.observe(m.lineage)
	if data == nil {
		return nil, nil
	}
	b.keys.UseSalt(m.salt)
	rec, err := b.codec.Decode(addr, data)
	if err != nil {
		return nil, fmt.Errorf("read %s from state: %w", addr, err)
	}
	return rec, nil
}

// Snapshot reads every record in one snapshot-isolated transaction.
func (b *Backend) Snapshot(ctx context.Context) (*state.Snapshot, error) {
	snap, err := b.Inspect(ctx)
	if err != nil {
		return nil, err
	}
	if err := snap.DamagedError(); err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	return snap, nil
}

// Inspect is Snapshot with unreadable records set aside.
func (b *Backend) Inspect(ctx context.Context) (*state.Snapshot, error) {
	snap, raw, err := b.readAll(ctx)
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	if err := b.decodeInto(snap, raw); err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	return snap, nil
}

// Addresses lists the addresses that start with prefix, in order,
// reading no record's data (see state.Backend).
func (b *Backend) Addresses(ctx context.Context, prefix string) ([]string, error) {
	pool, err := b.db.get(ctx)
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	rows, err := pool.Query(ctx, `SELECT address FROM sandboxer_records
		WHERE left(address, length($1)) = $1 ORDER BY address COLLATE "C"`, prefix)
	if err != nil {
		if isNoTables(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read state: %w", b.db.scrub(err))
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		if isNoTables(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read state: %w", b.db.scrub(err))
	}
	return out, nil
}

type rawRecord struct {
	addr string
	data []byte
}

func (b *Backend) readAll(ctx context.Context) (*state.Snapshot, []rawRecord, error) {
	snap := &state.Snapshot{Records: map[string]*state.Record{}}
	pool, err := b.db.get(ctx)
	if err != nil {
		return nil, nil, err
	}
	var raw []rawRecord
	err = inTx(ctx, pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		m, found, err := readMeta(ctx, tx, b.Describe(), false)
		if err != nil || !found {
			return err
		}
		snap.Lineage, snap.Serial = m.lineage, m.serial
		b.keys.UseSalt(m.salt)
		rows, err := tx.Query(ctx, `SELECT address, data FROM sandboxer_records`)
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
		return nil, nil, b.db.scrub(err)
	}
	if snap.Lineage != "" {
		b.observe(snap.Lineage)
	}
	return snap, raw, nil
}

// decodeInto decodes raw into snap; a key problem fails the whole read
// (it is not damage a state rm should fix).
func (b *Backend) decodeInto(snap *state.Snapshot, raw []rawRecord) error {
	for _, r := range raw {
		rec, err := b.codec.Decode(r.addr, r.data)
		var ke *state.KeyError
		if errors.As(err, &ke) {
			return err
		}
		if err != nil {
			if snap.Damaged == nil {
				snap.Damaged = map[string]error{}
			}
			snap.Damaged[r.addr] = err
			continue
		}
		snap.Records[r.addr] = rec
	}
	return nil
}

// ExpectLineage checks the lineage and serial a saved plan was made for.
func (b *Backend) ExpectLineage(ctx context.Context, lineage string, serial uint64) error {
	pool, err := b.db.get(ctx)
	if err != nil {
		return fmt.Errorf("check state: %w", err)
	}
	var m meta
	err = inTx(ctx, pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var err error
		m, _, err = readMeta(ctx, tx, b.Describe(), false)
		return err
	})
	if err != nil {
		return fmt.Errorf("check state: %w", b.db.scrub(err))
	}
	if m.lineage != "" {
		b.observe(m.lineage)
	}
	if m.lineage != lineage || m.serial != serial {
		return &state.StaleError{Backend: b.Describe(), WantLineage: lineage, GotLineage: m.lineage, WantSerial: serial, GotSerial: m.serial}
	}
	return nil
}

// EnsureLineage returns the lineage, creating the tables and a new
// lineage when there are none.
func (b *Backend) EnsureLineage(ctx context.Context) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	m, err := b.ensure(ctx)
	if err != nil {
		return "", fmt.Errorf("ensure state lineage: %w", err)
	}
	return m.lineage, nil
}

// ensure makes the state exist and checks its lineage; b.mu is held.
func (b *Backend) ensure(ctx context.Context) (meta, error) {
	pool, err := b.db.get(ctx)
	if err != nil {
		return meta{}, err
	}
	for range 2 {
		var m meta
		var found bool
		err := inTx(ctx, pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
			var err error
			m, found, err = readMeta(ctx, tx, b.Describe(), false)
			return err
		})
		if err != nil {
			return meta{}, b.db.scrub(err)
		}
		if found {
			return m, b.checkLineageLocked(m.lineage)
		}
		if b.lineage != "" {
			return meta{}, &state.LineageError{Backend: b.Describe(), Want: b.lineage}
		}
		if err := b.create(ctx, ""); err != nil {
			return meta{}, err
		}
	}
	return meta{}, fmt.Errorf("%s disappeared after it was created", b.Describe())
}

// create makes the tables and meta row; a value that created the state
// has nothing to back up.
func (b *Backend) create(ctx context.Context, lineage string) error {
	pool, err := b.db.get(ctx)
	if err != nil {
		return err
	}
	err = inTx(ctx, pool, pgx.TxOptions{}, func(tx pgx.Tx) error { return createState(ctx, tx, lineage) })
	if err != nil {
		return b.db.scrub(fmt.Errorf("create the state tables in %s: %w", b.Describe(), err))
	}
	b.backedUp = true
	return nil
}

// Put writes one record (see state.Backend).
func (b *Backend) Put(ctx context.Context, rec *state.Record) error {
	if rec == nil || rec.Address == "" {
		return errors.New("put into state: record has no address")
	}
	if err := b.write(ctx, rec.Address, rec); err != nil {
		return fmt.Errorf("put %s into state: %w", rec.Address, err)
	}
	return nil
}

// Delete removes one record.
func (b *Backend) Delete(ctx context.Context, addr string) error {
	if addr == "" {
		return errors.New("delete from state: empty address")
	}
	if err := b.write(ctx, addr, nil); err != nil {
		return fmt.Errorf("delete %s from state: %w", addr, err)
	}
	return nil
}

// Move removes the record at from and stores rec in one transaction (see
// state.Backend); the state must exist.
func (b *Backend) Move(ctx context.Context, from string, rec *state.Record) error {
	if rec == nil || rec.Address == "" || from == "" {
		return errors.New("move in state: empty address")
	}
	if from == rec.Address {
		return b.Put(ctx, rec)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	pool, err := b.db.get(ctx)
	if err != nil {
		return fmt.Errorf("move %s to %s in state: %w", from, rec.Address, err)
	}
	err = inTx(ctx, pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
		m, found, err := readMeta(ctx, tx, b.Describe(), true)
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%s has no state to move records in", b.Describe())
		}
		if err := b.checkLineageLocked(m.lineage); err != nil {
			return err
		}
		b.keys.UseSalt(m.salt)
		if err := b.writeTx(ctx, tx, m, from, nil); err != nil {
			return err
		}
		// The first half may have moved the serial: read it again.
		if m, _, err = readMeta(ctx, tx, b.Describe(), true); err != nil {
			return err
		}
		return b.writeTx(ctx, tx, m, rec.Address, rec)
	})
	if err != nil {
		return fmt.Errorf("move %s to %s in state: %w", from, rec.Address, b.db.scrub(err))
	}
	return nil
}

// write stores rec at addr (nil: deletes it) in one transaction: the meta
// row locked, the old bytes kept in history, the record row written, the
// serial moved. O(1) in the number of records.
func (b *Backend) write(ctx context.Context, addr string, rec *state.Record) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	pool, err := b.db.get(ctx)
	if err != nil {
		return err
	}
	if rec != nil && b.keys.Sealing() && b.keys.NeedsSalt() {
		// The salt lives in meta: make sure there is one to derive with.
		m, err := b.ensure(ctx)
		if err != nil {
			return err
		}
		b.keys.UseSalt(m.salt)
	}
	for range 2 {
		created := false
		err := inTx(ctx, pool, pgx.TxOptions{}, func(tx pgx.Tx) error {
			m, found, err := readMeta(ctx, tx, b.Describe(), true)
			if errors.Is(err, errNoTables) || err == nil && !found {
				created = true
				return err
			}
			if err != nil {
				return err
			}
			if err := b.checkLineageLocked(m.lineage); err != nil {
				return err
			}
			b.keys.UseSalt(m.salt)
			return b.writeTx(ctx, tx, m, addr, rec)
		})
		if err != nil {
			return b.db.scrub(err)
		}
		if !created {
			return nil
		}
		switch {
		case b.lineage != "":
			return &state.LineageError{Backend: b.Describe(), Want: b.lineage}
		case rec == nil:
			return nil // deleting from a state that does not exist
		}
		if err := b.create(ctx, ""); err != nil {
			return err
		}
	}
	return fmt.Errorf("%s disappeared during the write", b.Describe())
}

func (b *Backend) writeTx(ctx context.Context, tx pgx.Tx, m meta, addr string, rec *state.Record) error {
	var old []byte
	err := tx.QueryRow(ctx, `SELECT data FROM sandboxer_records WHERE address = $1`, addr).Scan(&old)
	if err != nil && !errors.Is(err, pgx.ErrNoRows) {
		return err
	}
	present := err == nil
	var data []byte
	if rec != nil {
		if present {
			// Never overwrite what this build cannot read (a newer
			// sandboxer's record, a damaged one, another key's).
			if _, err := b.codec.Decode(addr, old); err != nil {
				var ce *state.CorruptError
				if errors.As(err, &ce) {
					ce.Reason = "refusing to overwrite it, because " + ce.Reason + " (delete it first)"
				}
				return err
			}
		}
		data, err = b.codec.Encode(rec)
		if err != nil {
			return err
		}
		if present && bytes.Equal(old, data) {
			return nil
		}
	} else if !present {
		return nil
	}
	next := int64(m.serial) + 1
	if !b.backedUp {
		// This write-set's backup starts here; history before it is no
		// longer needed by any Backup.
		if _, err := tx.Exec(ctx, `UPDATE sandboxer_meta SET backup_serial = serial WHERE id = 1`); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM sandboxer_history WHERE serial <= $1`, int64(m.serial)); err != nil {
			return err
		}
	}
	var oldArg any
	if present {
		oldArg = old
	}
	if _, err := tx.Exec(ctx, `INSERT INTO sandboxer_history (serial, address, data) VALUES ($1, $2, $3)`, next, addr, oldArg); err != nil {
		return err
	}
	if rec == nil {
		_, err = tx.Exec(ctx, `DELETE FROM sandboxer_records WHERE address = $1`, addr)
	} else {
		_, err = tx.Exec(ctx, `INSERT INTO sandboxer_records (address, data) VALUES ($1, $2)
			ON CONFLICT (address) DO UPDATE SET data = EXCLUDED.data`, addr, data)
	}
	if err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `UPDATE sandboxer_meta SET serial = $1, schema_version = GREATEST(schema_version, $2) WHERE id = 1`,
		next, state.SchemaVersion); err != nil {
		return err
	}
	b.backedUp = true
	if b.kept++; b.kept >= maxHistory {
		b.backedUp, b.kept = false, 0
	}
	return nil
}
