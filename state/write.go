package state

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"

	bolt "go.etcd.io/bbolt"
)

// Put writes one record; the serial moves only when the stored bytes
// change. It creates the file, with a random lineage, on the first write.
func (s *Store) Put(ctx context.Context, rec *Record) error {
	if rec == nil || rec.Address == "" {
		return errors.New("put into state: record has no address")
	}
	if err := s.prepareKeys(ctx); err != nil {
		return fmt.Errorf("put %s into state: %w", rec.Address, err)
	}
	sealed, err := sealRecord(rec, s.keys)
	if err != nil {
		return fmt.Errorf("put %s into state: seal: %w", rec.Address, err)
	}
	data, err := encodeRecord(sealed)
	if err != nil {
		return fmt.Errorf("put %s into state: encode: %w", rec.Address, err)
	}
	if err := s.write(ctx, rec.Address, data); err != nil {
		return fmt.Errorf("put %s into state: %w", rec.Address, err)
	}
	return nil
}

// Delete removes a record. Deleting an absent record changes nothing: no
// serial bump, and no file is created.
func (s *Store) Delete(ctx context.Context, addr string) error {
	if addr == "" {
		return errors.New("delete from state: empty address")
	}
	if err := s.write(ctx, addr, nil); err != nil {
		return fmt.Errorf("delete %s from state: %w", addr, err)
	}
	return nil
}

// unchanged reports whether storing data (nil = delete) over what is at
// the key is a no-op: present says whether anything is (old is nil for a
// nested bucket, which only a delete removes).
func unchanged(present bool, old, data []byte) bool {
	if data == nil {
		return !present
	}
	return old != nil && bytes.Equal(old, data)
}

// write stores data under addr, or deletes addr when data is nil.
func (s *Store) write(ctx context.Context, addr string, data []byte) error {
	if err := s.ready(ctx); err != nil {
		return err
	}

	// Look first, read-only: a re-apply mostly changes nothing, and then
	// the file is never opened for writing; nor is a file that turns out
	// not to be ours (bbolt may write to a file merely opened read-write).
	var m meta
	var old []byte
	var present bool
	found, err := s.view(ctx, func(tx *bolt.Tx) error {
		var err error
		if m, err = readMeta(tx, s.path); err != nil {
			return err
		}
		old, present, err = lookup(tx, s.path, addr)
		return err
	})
	if err != nil {
		return err
	}
	switch {
	case found:
		if err := s.checkLineageLocked(m.lineage); err != nil {
			return err
		}
		if unchanged(present, old, data) {
			return nil
		}
	case s.knownLineage() != "":
		return &LineageError{Path: s.path, Want: s.knownLineage()}
	case data == nil:
		return nil // deleting from a state that does not exist
	default:
		created, err := createFile(ctx, s.path)
		if err != nil {
			return err
		}
		if created {
			s.mu.Lock()
			s.backedUp = true // nothing existed before this write-set
			s.mu.Unlock()
		}
	}

	// The change itself is committed with those of concurrent writers.
	err = s.commit(ctx, func(tx *bolt.Tx) error { return s.apply(tx, addr, data) })
	if errors.Is(err, fs.ErrNotExist) {
		if l := s.knownLineage(); l != "" {
			return &LineageError{Path: s.path, Want: l}
		}
		return fmt.Errorf("state file %s disappeared during the write", s.path)
	}
	return err
}

// apply is the write transaction: everything is checked again, because
// another process may have written between the look and this transaction.
func (s *Store) apply(tx *bolt.Tx, addr string, data []byte) error {
	m, err := readMeta(tx, s.path)
	if err != nil {
		return err
	}
	if err := s.checkLineageLocked(m.lineage); err != nil {
		return err
	}
	s.keys.useSalt(m.salt)
	sb := tx.Bucket(bucketSandboxes)
	key := []byte(addr)
	old := sb.Get(key)
	nested := old == nil && sb.Bucket(key) != nil
	if unchanged(old != nil || nested, old, data) {
		return errNoChange
	}
	if (old != nil || nested) && data != nil {
		if err := s.checkOverwrite(addr, old); err != nil {
			return err
		}
	}
	if !s.backedUp {
		if err := writeBackup(tx, s.path); err != nil {
			return err
		}
		s.backedUp = true
	}
	switch {
	case nested:
		err = sb.DeleteBucket(key)
	case data == nil:
		err = sb.Delete(key)
	default:
		err = sb.Put(key, data)
	}
	if err != nil {
		return fmt.Errorf("write state %s: %w", s.path, err)
	}
	mb := tx.Bucket(bucketMeta)
	if err := putUint64(mb, keySerial, m.serial+1); err != nil {
		return fmt.Errorf("write state %s: %w", s.path, err)
	}
	if m.schema < SchemaVersion {
		if err := putUint64(mb, keySchemaVersion, SchemaVersion); err != nil {
			return fmt.Errorf("write state %s: %w", s.path, err)
		}
	}
	return nil
}

// checkOverwrite refuses to replace a record this build cannot read: one
// from a newer sandboxer (its extra fields would be lost) or one that does
// not decode (the damage would be hidden); old is nil for a nested bucket.
// Delete still removes any of them.
func (s *Store) checkOverwrite(addr string, old []byte) error {
	if _, err := s.decode(addr, old, nil); err != nil {
		var ce *CorruptError
		if errors.As(err, &ce) {
			ce.Reason = "refusing to overwrite it, because " + ce.Reason + " (delete it first)"
		}
		return err
	}
	return nil
}

// EnsureLineage returns the state's lineage, creating an empty state file
// (with a new random lineage) when there is none yet, so that resources
// can be labelled with the lineage before their record is written. Like a
// write, it refuses a file whose lineage is not the one this Store saw
// first (*LineageError).
func (s *Store) EnsureLineage(ctx context.Context) (string, error) {
	if err := s.ready(ctx); err != nil {
		return "", fmt.Errorf("ensure state lineage: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for range 2 { // a second look after creating, or after losing the race to create
		var m meta
		found, err := s.view(ctx, func(tx *bolt.Tx) error {
			var err error
			m, err = readMeta(tx, s.path)
			return err
		})
		if err != nil {
			return "", fmt.Errorf("ensure state lineage: %w", err)
		}
		if found {
			if err := s.checkLineageLocked(m.lineage); err != nil {
				return "", fmt.Errorf("ensure state lineage: %w", err)
			}
			return m.lineage, nil
		}
		if l := s.knownLineage(); l != "" {
			return "", fmt.Errorf("ensure state lineage: %w", &LineageError{Path: s.path, Want: l})
		}
		created, err := createFile(ctx, s.path)
		if err != nil {
			return "", fmt.Errorf("ensure state lineage: %w", err)
		}
		if created {
			s.backedUp = true // nothing existed before this write-set
		}
	}
	return "", fmt.Errorf("ensure state lineage: state file %s disappeared after it was created", s.path)
}

// prepareKeys makes sure a passphrase key can be derived before a write
// seals with it: the state must exist and have a salt. Files made before
// salts existed get one (a meta change, not a record change: the serial
// stays).
func (s *Store) prepareKeys(ctx context.Context) error {
	if !s.keys.Sealing() || !s.keys.needsSalt() {
		return nil
	}
	if _, err := s.EnsureLineage(ctx); err != nil {
		return err
	}
	var m meta
	if _, err := s.view(ctx, func(tx *bolt.Tx) error {
		var err error
		m, err = readMeta(tx, s.path)
		return err
	}); err != nil {
		return err
	}
	if m.salt == nil {
		err := s.update(ctx, func(tx *bolt.Tx) error {
			if m, err := readMeta(tx, s.path); err != nil || m.salt != nil {
				return err
			}
			return tx.Bucket(bucketMeta).Put(keySalt, newSalt())
		})
		if err != nil {
			return err
		}
		return s.prepareKeys(ctx)
	}
	s.keys.useSalt(m.salt)
	return nil
}
