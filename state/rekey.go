package state

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	bolt "go.etcd.io/bbolt"
)

// Backup reads the copy of the state taken before the last write-set that
// changed it ("<path>.backup"); nil, nil when there is none.
func (s *Store) Backup(ctx context.Context) (*Snapshot, error) {
	b := BackupPath(s.path)
	if _, err := os.Stat(b); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	return Open(b, WithKeyring(s.keys)).Inspect(ctx)
}

// needsReseal reports whether rec's stored secrets differ from what the
// keyring writes: sealed under another key, or in the clear while
// sealing (or sealed while not).
func needsReseal(rec *Record, currentID string) bool {
	ids, clear := sealedWith(rec)
	if currentID == "" {
		return len(ids) > 0
	}
	return clear || len(ids) > 1 || len(ids) == 1 && !ids[currentID]
}

// Rekey rewrites every record under the keyring's current key (or in the
// clear without one) in one transaction, then rewrites the file compactly
// in place: bbolt leaves freed pages as they were, and they would still
// hold the secrets as they were stored before. The backup is replaced by a
// copy of the result, for the same reason. The file lock is held
// throughout, so no other process reads or writes in between.
func (s *Store) Rekey(ctx context.Context) (n int, err error) {
	if err := s.ready(ctx); err != nil {
		return 0, fmt.Errorf("rekey state: %w", err)
	}
	if err := s.prepareKeys(ctx); err != nil {
		return 0, fmt.Errorf("rekey state: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := os.Stat(s.path); errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	defer func() {
		if err != nil {
			err = fmt.Errorf("rekey state: %w", withFix(s.path, err))
		}
	}()
	db, err := openDB(ctx, s.path, false, true)
	if err != nil {
		return 0, err
	}
	defer closeDB(db, s.path, &err)
	err = guard(s.path, func() error {
		return db.Update(func(tx *bolt.Tx) error {
			var err error
			n, err = s.reseal(tx)
			return err
		})
	})
	if errors.Is(err, errNoChange) {
		err = nil
	}
	if err != nil {
		return 0, err
	}
	return n, s.compactInPlace(db)
}

// reseal is Rekey's transaction.
func (s *Store) reseal(tx *bolt.Tx) (int, error) {
	m, err := readMeta(tx, s.path)
	if err != nil {
		return 0, err
	}
	if err := s.checkLineageLocked(m.lineage); err != nil {
		return 0, err
	}
	s.keys.useSalt(m.salt)
	currentID := s.keys.CurrentKeyID()
	sb := tx.Bucket(bucketSandboxes)
	type change struct {
		key, data []byte
	}
	var changes []change
	err = sb.ForEach(func(k, v []byte) error {
		// The stored form, before unsealing, says how it is sealed.
		if v == nil {
			return s.decodeErr(string(k), v)
		}
		raw, err := decodeRecord(v, SchemaVersion, recordUpgrades(), nil)
		if err != nil {
			return s.decodeErr(string(k), v)
		}
		if !needsReseal(raw, currentID) {
			return nil
		}
		rec, err := s.decode(string(k), v, nil)
		if err != nil {
			return err
		}
		sealed, err := sealRecord(rec, s.keys)
		if err != nil {
			return err
		}
		data, err := encodeRecord(sealed)
		if err != nil {
			return err
		}
		changes = append(changes, change{key: append([]byte(nil), k...), data: data})
		return nil
	})
	if err != nil {
		return 0, err
	}
	if len(changes) == 0 {
		return 0, errNoChange
	}
	for _, c := range changes {
		if err := sb.Put(c.key, c.data); err != nil {
			return 0, fmt.Errorf("write state %s: %w", s.path, err)
		}
	}
	if err := putUint64(tx.Bucket(bucketMeta), keySerial, m.serial+1); err != nil {
		return 0, fmt.Errorf("write state %s: %w", s.path, err)
	}
	return len(changes), nil
}

// decodeErr is the error decode gives for a record that does not decode.
func (s *Store) decodeErr(addr string, data []byte) error {
	_, err := s.decode(addr, data, nil)
	if err == nil {
		err = &CorruptError{Path: s.path, Address: addr, Reason: "it does not decode"}
	}
	return err
}

// compactInPlace copies the live data of db (open read-write, so its
// exclusive file lock keeps every other process out) into a fresh file,
// writes that over the state file and makes it the backup too. The
// inode stays, so a process waiting for the lock opens the new content.
func (s *Store) compactInPlace(db *bolt.DB) error {
	dir := filepath.Dir(s.path)
	tmp, err := os.CreateTemp(dir, filepath.Base(s.path)+".compact-*")
	if err != nil {
		return err
	}
	tmpName := tmp.Name()
	tmp.Close()
	defer os.Remove(tmpName)
	dst, err := bolt.Open(tmpName, 0o600, &bolt.Options{Timeout: fileLockTimeout, NoStatistics: true})
	if err != nil {
		return err
	}
	if err := bolt.Compact(dst, db, 0); err != nil {
		dst.Close()
		return fmt.Errorf("compact %s: %w", s.path, err)
	}
	if err := dst.Close(); err != nil {
		return err
	}
	src, err := os.Open(tmpName)
	if err != nil {
		return err
	}
	defer src.Close()
	out, err := os.OpenFile(s.path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	size, err := io.Copy(out, src)
	if err == nil {
		err = out.Truncate(size)
	}
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("rewrite %s: %w", s.path, err)
	}
	if err := os.Rename(tmpName, BackupPath(s.path)); err != nil {
		return fmt.Errorf("replace backup %s: %w", BackupPath(s.path), err)
	}
	return nil
}
