package state

import (
	"context"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Move removes the record at from and stores rec (at rec.Address) in one
// transaction: a warm-pool claim hands a member's instance to its
// claimant, and no reader may ever see both records (two owners of one
// instance) or, after a crash, either half alone. The state must exist.
func (s *Store) Move(ctx context.Context, from string, rec *Record) error {
	if rec == nil || rec.Address == "" || from == "" {
		return errors.New("move in state: empty address")
	}
	if from == rec.Address {
		return s.Put(ctx, rec)
	}
	if err := s.prepareKeys(ctx); err != nil {
		return fmt.Errorf("move %s to %s in state: %w", from, rec.Address, err)
	}
	sealed, err := sealRecord(rec, s.keys)
	if err != nil {
		return fmt.Errorf("move %s to %s in state: seal: %w", from, rec.Address, err)
	}
	data, err := encodeRecord(sealed)
	if err != nil {
		return fmt.Errorf("move %s to %s in state: encode: %w", from, rec.Address, err)
	}
	if err := s.ready(ctx); err != nil {
		return err
	}
	err = s.commit(ctx, func(tx *bolt.Tx) error {
		e1 := s.apply(tx, from, nil)
		if e1 != nil && !errors.Is(e1, errNoChange) {
			return e1
		}
		e2 := s.apply(tx, rec.Address, data)
		if e2 != nil && !errors.Is(e2, errNoChange) {
			return e2
		}
		if e1 != nil && e2 != nil {
			return errNoChange
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("move %s to %s in state: %w", from, rec.Address, err)
	}
	return nil
}
