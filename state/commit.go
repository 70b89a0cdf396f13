package state

import (
	"context"
	"errors"

	bolt "go.etcd.io/bbolt"
)

// Group commit: the writes of one Store that arrive while another is in
// flight share its successor's transaction, and so its open of the file
// and its fsync. A burst of 100 pool claims was 100 transactions in
// series, each waiting for the one before it to reach the disk; now it is
// a few. A change that fails alone is given its own error and the others
// commit without it (bbolt's DB.Batch does the same, on a handle this
// package does not keep open).

// pendingChange is one write waiting for a transaction.
type pendingChange struct {
	fn   func(*bolt.Tx) error
	done chan error
}

// errChangeFailed rolls back a group's transaction when one of its
// changes fails; that change is then answered and the rest retried.
var errChangeFailed = errors.New("a change of the group failed")

// commit runs fn in a write transaction shared with the other writes
// pending on s. fn returning errNoChange changes nothing and is no error.
func (s *Store) commit(ctx context.Context, fn func(*bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p := &pendingChange{fn: fn, done: make(chan error, 1)}
	s.qmu.Lock()
	s.queue = append(s.queue, p)
	s.qmu.Unlock()
	// Whoever holds mu next commits everything queued by then; p has
	// been answered by the time this caller gets mu, or is in its batch.
	s.mu.Lock()
	s.qmu.Lock()
	batch := s.queue
	s.queue = nil
	s.qmu.Unlock()
	if len(batch) > 0 {
		s.commitGroup(context.WithoutCancel(ctx), batch)
	}
	s.mu.Unlock()
	return <-p.done
}

// commitGroup commits batch's changes in as few transactions as their
// failures allow. s.mu is held.
func (s *Store) commitGroup(ctx context.Context, batch []*pendingChange) {
	for len(batch) > 0 {
		failed, ferr := -1, error(nil)
		backedUp := s.backedUp
		err := s.update(ctx, func(tx *bolt.Tx) error {
			changed := false
			for i, p := range batch {
				switch err := p.fn(tx); {
				case err == nil:
					changed = true
				case errors.Is(err, errNoChange):
				default:
					failed, ferr = i, err
					return errChangeFailed
				}
			}
			if !changed {
				return errNoChange
			}
			return nil
		})
		if err != nil {
			s.backedUp = backedUp // the backup, if written, was rolled back too
		}
		if failed >= 0 && errors.Is(err, errChangeFailed) {
			batch[failed].done <- ferr
			batch = append(batch[:failed:failed], batch[failed+1:]...)
			continue
		}
		for _, p := range batch {
			p.done <- err
		}
		return
	}
}
