package state

import (
	"context"
	"fmt"
	"os"

	bolt "go.etcd.io/bbolt"
)

// Importer is a backend a whole state can be copied into (state migrate).
type Importer interface {
	// Import makes the state hold exactly snap's records, lineage and
	// serial, in one step. It refuses (*ImportError) a state of another
	// lineage, or one of the same lineage that is ahead of snap.
	Import(ctx context.Context, snap *Snapshot) error
}

var _ Importer = (*Store)(nil)

// ImportError reports why a state was not imported; nothing changed.
type ImportError struct {
	Where           string
	Lineage, Want   string
	Serial, SerialW uint64
}

func (e *ImportError) Error() string {
	if e.Lineage != e.Want {
		return fmt.Sprintf("%s holds another state (lineage %s, not %s); refusing to overwrite it (empty it first, or migrate to another place)", e.Where, e.Lineage, e.Want)
	}
	return fmt.Sprintf("%s is ahead of the state being copied (serial %d, the copy has %d); refusing to overwrite newer records", e.Where, e.Serial, e.SerialW)
}

// CheckImport is the rule every Importer applies: an empty target, or the
// same lineage not ahead of snap.
func CheckImport(where, lineage string, serial uint64, snap *Snapshot) error {
	if lineage == "" {
		return nil
	}
	if lineage != snap.Lineage || serial > snap.Serial {
		return &ImportError{Where: where, Lineage: lineage, Want: snap.Lineage, Serial: serial, SerialW: snap.Serial}
	}
	return nil
}

// Import copies snap into the state file (see Importer), creating it with
// snap's lineage when there is none; the file as it was is backed up.
func (s *Store) Import(ctx context.Context, snap *Snapshot) error {
	if err := s.ready(ctx); err != nil {
		return fmt.Errorf("import state: %w", err)
	}
	if snap.Lineage == "" {
		return fmt.Errorf("import state: the state to copy has no lineage (it is empty)")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var m meta
	found, err := s.view(ctx, func(tx *bolt.Tx) error {
		var err error
		m, err = readMeta(tx, s.path)
		return err
	})
	if err != nil {
		return fmt.Errorf("import state: %w", err)
	}
	if found {
		if err := CheckImport(s.Describe(), m.lineage, m.serial, snap); err != nil {
			return err
		}
	} else {
		created, err := createFileWith(ctx, s.path, snap.Lineage)
		if err != nil {
			return fmt.Errorf("import state: %w", err)
		}
		s.backedUp = s.backedUp || created
	}
	if err := s.prepareKeysLocked(ctx); err != nil {
		return fmt.Errorf("import state: %w", err)
	}
	err = s.update(ctx, func(tx *bolt.Tx) error {
		m, err := readMeta(tx, s.path)
		if err != nil {
			return err
		}
		// Again inside the transaction: another process may have
		// written since the look.
		if err := CheckImport(s.Describe(), m.lineage, m.serial, snap); err != nil {
			return err
		}
		s.lmu.Lock()
		s.lineage = m.lineage
		s.lmu.Unlock()
		s.keys.useSalt(m.salt)
		if !s.backedUp {
			if err := writeBackup(tx, s.path); err != nil {
				return err
			}
			s.backedUp = true
		}
		if err := tx.DeleteBucket(bucketSandboxes); err != nil {
			return err
		}
		sb, err := tx.CreateBucket(bucketSandboxes)
		if err != nil {
			return err
		}
		for addr, rec := range snap.Records {
			sealed, err := sealRecord(rec, s.keys)
			if err != nil {
				return err
			}
			data, err := encodeRecord(sealed)
			if err != nil {
				return err
			}
			if err := sb.Put([]byte(addr), data); err != nil {
				return err
			}
		}
		mb := tx.Bucket(bucketMeta)
		if err := putUint64(mb, keySerial, snap.Serial); err != nil {
			return err
		}
		return putUint64(mb, keySchemaVersion, SchemaVersion)
	})
	if err != nil {
		return fmt.Errorf("import state: %w", err)
	}
	return nil
}

// prepareKeysLocked is prepareKeys for a caller holding s.mu: the file
// exists; it only adds a salt when a passphrase needs one.
func (s *Store) prepareKeysLocked(ctx context.Context) error {
	if !s.keys.needsSalt() {
		return nil
	}
	if _, err := os.Stat(s.path); err != nil {
		return err
	}
	return s.update(ctx, func(tx *bolt.Tx) error {
		m, err := readMeta(tx, s.path)
		if err != nil {
			return err
		}
		if m.salt != nil {
			s.keys.useSalt(m.salt)
			return errNoChange
		}
		salt := newSalt()
		s.keys.useSalt(salt)
		return tx.Bucket(bucketMeta).Put(keySalt, salt)
	})
}
