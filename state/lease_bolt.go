package state

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"sort"

	bolt "go.etcd.io/bbolt"
)

// bucketLeases holds the leases of a state file, keyed by address, a NUL
// and the holder. It is made by the first Hold: files without it have no
// leases.
var bucketLeases = []byte("leases")

func leaseKey(addr, holder string) []byte {
	return []byte(addr + "\x00" + holder)
}

// Hold records or renews a lease (see Leases). It creates the state file
// when there is none, as a first Put would. A lease write moves no serial
// and takes no backup.
func (s *Store) Hold(ctx context.Context, l Lease) error {
	if err := checkLease(l); err != nil {
		return err
	}
	data, err := json.Marshal(l)
	if err != nil {
		return err
	}
	if err := s.leaseWrite(ctx, func(b *bolt.Bucket) error { return b.Put(leaseKey(l.Address, l.Holder), data) }, true); err != nil {
		return fmt.Errorf("hold %s: %w", l.Address, err)
	}
	return nil
}

// Unhold drops one lease (see Leases).
func (s *Store) Unhold(ctx context.Context, addr, holder string) error {
	err := s.leaseWrite(ctx, func(b *bolt.Bucket) error {
		k := leaseKey(addr, holder)
		if b.Get(k) == nil {
			return errNoChange
		}
		return b.Delete(k)
	}, false)
	if err != nil {
		return fmt.Errorf("unhold %s: %w", addr, err)
	}
	return nil
}

// leaseWrite runs fn on the leases bucket in one write transaction of its
// own, after the same lineage check as a record write.
func (s *Store) leaseWrite(ctx context.Context, fn func(*bolt.Bucket) error, create bool) error {
	if err := s.ready(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for range 2 {
		err := s.update(ctx, func(tx *bolt.Tx) error {
			m, err := readMeta(tx, s.path)
			if err != nil {
				return err
			}
			if err := s.checkLineageLocked(m.lineage); err != nil {
				return err
			}
			b := tx.Bucket(bucketLeases)
			if b == nil {
				if !create {
					return errNoChange
				}
				if b, err = tx.CreateBucket(bucketLeases); err != nil {
					return err
				}
			}
			return fn(b)
		})
		if !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		switch {
		case s.knownLineage() != "":
			return &LineageError{Path: s.path, Want: s.knownLineage()}
		case !create:
			return nil
		}
		created, err := createFile(ctx, s.path)
		if err != nil {
			return err
		}
		if created {
			s.backedUp = true // nothing existed before this write-set
		}
	}
	return fmt.Errorf("state file %s disappeared during the write", s.path)
}

// HeldBy lists leases (see Leases).
func (s *Store) HeldBy(ctx context.Context, addr string) ([]Lease, error) {
	if err := s.ready(ctx); err != nil {
		return nil, err
	}
	var out []Lease
	_, err := s.view(ctx, func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketLeases)
		if b == nil {
			return nil
		}
		c := b.Cursor()
		prefix := []byte(addr + "\x00")
		if addr == "" {
			prefix = nil
		}
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			var l Lease
			if err := json.Unmarshal(v, &l); err != nil {
				return &CorruptError{Path: s.path, Reason: fmt.Sprintf("lease %q cannot be read", k), Err: err}
			}
			out = append(out, l)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read the leases of %s: %w", s.path, err)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Address != out[j].Address {
			return out[i].Address < out[j].Address
		}
		return out[i].Holder < out[j].Holder
	})
	return out, nil
}
