package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"

	bolt "go.etcd.io/bbolt"
)

// Store is the state file at one path. It holds no open file between
// calls. Use one Store per command: the Store remembers the lineage it
// first saw (and refuses to write into a file that has since been
// replaced), and backs the file up before its first write.
//
// A Store is safe for concurrent use; its writes are serialised.
type Store struct {
	path string
	// keys seal the secrets of what is written and open what is read;
	// nil: in the clear.
	keys *Keyring

	// tx orders this Store's own transactions before they reach the
	// file's lock: views share it, updates hold it alone. Without it,
	// concurrent callers in one process contend on bbolt's flock, which
	// retries every 50 ms, so a burst of 100 claims took over a second.
	// Other processes still meet at the flock.
	tx sync.RWMutex
	// shared is the handle of the write in flight, if any, which reads
	// use meanwhile; sharedUsers counts them. rdb is the read-only handle
	// concurrent reads share otherwise (boltfile.go). hmu guards them.
	hmu         sync.Mutex
	shared      *bolt.DB
	sharedUsers sync.WaitGroup
	rdb         *bolt.DB
	rdbWalked   bool
	rdbUsers    int

	// lmu guards lineage alone, so a read's observe never waits for a
	// write in flight (which holds mu across its fsync).
	lmu sync.Mutex
	// lineage is the lineage first seen by this Store, "" until then.
	lineage string

	// qmu guards queue, the writes waiting for a group commit (commit.go).
	qmu   sync.Mutex
	queue []*pendingChange

	mu sync.Mutex // serialises this Store's writes and guards the field below
	// backedUp is set once the write-set's backup is taken, or when this
	// Store created the file (there was nothing to back up).
	backedUp bool
}

// Open returns a store for the state file at path. It creates nothing: the
// file (and its folder, 0700) appear on the first write, with mode 0600. A
// missing file reads as an empty snapshot (Lineage "", Serial 0).
func Open(path string, opts ...Option) *Store {
	s := &Store{path: path}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Option configures a Store.
type Option func(*Store)

// WithKeyring seals secrets under k's current key and opens records with
// any of its keys (see Keyring).
func WithKeyring(k *Keyring) Option { return func(s *Store) { s.keys = k } }

// Describe names the state file for messages.
func (s *Store) Describe() string { return "state file " + s.path }

// Path returns the state file's path as given to Open.
func (s *Store) Path() string { return s.path }

func (s *Store) ready(ctx context.Context) error {
	if s.path == "" {
		return errors.New("no state file path")
	}
	return ctx.Err()
}

// observe records the lineage a read saw, if this Store has none yet.
func (s *Store) observe(lineage string) {
	s.lmu.Lock()
	defer s.lmu.Unlock()
	if s.lineage == "" {
		s.lineage = lineage
	}
}

// checkLineageLocked is observe for writes: it also refuses a lineage that
// differs from the first one seen. s.mu must be held.
func (s *Store) checkLineageLocked(got string) error {
	s.lmu.Lock()
	defer s.lmu.Unlock()
	if s.lineage == "" {
		s.lineage = got
		return nil
	}
	if got != s.lineage {
		return &LineageError{Path: s.path, Want: s.lineage, Got: got}
	}
	return nil
}

// knownLineage is the lineage this Store has seen, "" for none yet.
func (s *Store) knownLineage() string {
	s.lmu.Lock()
	defer s.lmu.Unlock()
	return s.lineage
}

// Addresses lists the addresses that start with prefix, in order,
// reading keys only (see Backend).
func (s *Store) Addresses(ctx context.Context, prefix string) ([]string, error) {
	if err := s.ready(ctx); err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	var out []string
	var lineage string
	found, err := s.view(ctx, func(tx *bolt.Tx) error {
		m, err := readMeta(tx, s.path)
		if err != nil {
			return err
		}
		lineage = m.lineage
		c := tx.Bucket(bucketSandboxes).Cursor()
		p := []byte(prefix)
		for k, _ := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, _ = c.Next() {
			out = append(out, string(k))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	if found {
		s.observe(lineage)
	}
	return out, nil
}

type rawRecord struct {
	addr string
	data []byte // nil: a nested bucket where a record should be
}

// Snapshot reads the whole state in one short read-only transaction. A
// record that cannot be read fails the whole read, with an error naming
// it (and every other damaged one): a plan made without it would destroy
// or recreate what it describes.
func (s *Store) Snapshot(ctx context.Context) (*Snapshot, error) {
	snap, err := s.Inspect(ctx)
	if err != nil {
		return nil, err
	}
	if err := snap.DamagedError(); err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	return snap, nil
}

// Inspect reads the whole state like Snapshot, except that records it
// cannot read (see Snapshot.Damaged) are set aside instead of failing the
// read. It is for the commands that must keep working around one damaged
// record: listing the state, and reaping every other sandbox.
func (s *Store) Inspect(ctx context.Context) (*Snapshot, error) {
	if err := s.ready(ctx); err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	snap := &Snapshot{Records: map[string]*Record{}}
	var raw []rawRecord
	found, err := s.viewAll(ctx, func(tx *bolt.Tx) error {
		m, err := readMeta(tx, s.path)
		if err != nil {
			return err
		}
		snap.Lineage, snap.Serial = m.lineage, m.serial
		s.keys.useSalt(m.salt)
		b := tx.Bucket(bucketSandboxes)
		// Copy every record into one buffer, sized by a first pass: one
		// allocation rather than one per record.
		size, n := 0, 0
		err = b.ForEach(func(k, v []byte) error {
			size, n = size+len(v), n+1
			return nil
		})
		if err != nil {
			return err
		}
		buf := make([]byte, 0, size)
		raw = make([]rawRecord, 0, n)
		return b.ForEach(func(k, v []byte) error {
			if v == nil {
				raw = append(raw, rawRecord{addr: string(k)})
				return nil
			}
			start := len(buf)
			buf = append(buf, v...)
			raw = append(raw, rawRecord{addr: string(k), data: buf[start:len(buf):len(buf)]})
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("read state: %w", err)
	}
	if !found {
		return snap, nil
	}
	s.observe(snap.Lineage)
	// Decoding happens after the file is closed: readers hold a shared
	// flock while it is open, and writers wait for it.
	snap.Records = make(map[string]*Record, len(raw))
	names := newInterner()
	for _, r := range raw {
		rec, err := s.decode(r.addr, r.data, names)
		var ke *KeyError
		if errors.As(err, &ke) {
			// A key problem is not damage: the whole read fails, with
			// the way to the right key, rather than offering state rm.
			return nil, fmt.Errorf("read state: %w", err)
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
	return snap, nil
}

// Get reads one record (nil, nil when absent). Other records are not
// decoded, so a damaged one elsewhere does not get in the way.
func (s *Store) Get(ctx context.Context, addr string) (*Record, error) {
	if err := s.ready(ctx); err != nil {
		return nil, fmt.Errorf("read %s from state: %w", addr, err)
	}
	var lineage string
	var data []byte
	var present bool
	found, err := s.view(ctx, func(tx *bolt.Tx) error {
		m, err := readMeta(tx, s.path)
		if err != nil {
			return err
		}
		lineage = m.lineage
		s.keys.useSalt(m.salt)
		data, present, err = lookup(tx, s.path, addr)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("read %s from state: %w", addr, err)
	}
	if !found {
		return nil, nil
	}
	s.observe(lineage)
	if !present {
		return nil, nil
	}
	rec, err := s.decode(addr, data, nil)
	if err != nil {
		return nil, fmt.Errorf("read %s from state: %w", addr, err)
	}
	return rec, nil
}

// lookup returns a copy of the bytes stored at addr. present is true also
// for a nested bucket at addr (data nil), which is damage, not absence.
func lookup(tx *bolt.Tx, path, addr string) (data []byte, present bool, err error) {
	b := tx.Bucket(bucketSandboxes)
	key := []byte(addr)
	v := b.Get(key)
	if v == nil {
		return nil, b.Bucket(key) != nil, nil
	}
	if err := checkSize(tx, path, v); err != nil {
		return nil, false, err
	}
	return bytes.Clone(v), true, nil
}

// checkSize refuses a value longer than the file's pages in use: only a
// damaged page, which a lookup does not walk (see openDB), gives one, and
// copying it would allocate up to 4 GiB before faulting.
func checkSize(tx *bolt.Tx, path string, v []byte) error {
	if int64(len(v)) > tx.Size() {
		return &CorruptError{Path: path, Reason: fmt.Sprintf("its data is inconsistent: a %d-byte value in a file of %d bytes", len(v), tx.Size())}
	}
	return nil
}

// decode decodes the record stored at addr; names may be nil (see
// decodeCurrent).
func (s *Store) decode(addr string, data []byte, names *interner) (*Record, error) {
	if data == nil {
		return nil, withFix(s.path, &CorruptError{Path: s.path, Address: addr, Reason: "it is a bucket, not a record"})
	}
	rec, err := decodeRecord(data, SchemaVersion, recordUpgrades(), names)
	var future futureRecordError
	switch {
	case errors.As(err, &future):
		return nil, &FutureSchemaError{Path: s.path, Address: addr, Version: future.version, Supported: SchemaVersion}
	case err != nil:
		return nil, withFix(s.path, &CorruptError{Path: s.path, Address: addr, Reason: "it does not decode", Err: err})
	case rec.Address != addr:
		return nil, withFix(s.path, &CorruptError{Path: s.path, Address: addr,
			Reason: fmt.Sprintf("it is stored under %q but names itself %q", addr, rec.Address)})
	}
	if err := unsealRecord(s.Describe(), rec, s.keys); err != nil {
		return nil, err
	}
	return rec, nil
}

// ExpectLineage checks that the state is still the one a saved plan was
// made against: a *StaleError when its lineage or serial differ. A missing
// file has lineage "" and serial 0.
func (s *Store) ExpectLineage(ctx context.Context, lineage string, serial uint64) error {
	if err := s.ready(ctx); err != nil {
		return fmt.Errorf("check state: %w", err)
	}
	var m meta
	found, err := s.view(ctx, func(tx *bolt.Tx) error {
		var err error
		m, err = readMeta(tx, s.path)
		return err
	})
	if err != nil {
		return fmt.Errorf("check state: %w", err)
	}
	if found {
		s.observe(m.lineage)
	}
	if m.lineage != lineage || m.serial != serial {
		return &StaleError{Path: s.path, WantLineage: lineage, GotLineage: m.lineage, WantSerial: serial, GotSerial: m.serial}
	}
	return nil
}
