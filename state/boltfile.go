package state

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// fileLockTimeout bounds the wait for bbolt's own flock on the state file.
// Other processes hold it only for the milliseconds of one transaction, so
// running into it means something is wrong, not busy.
const fileLockTimeout = 5 * time.Second

// errEmptyFile is returned by openExisting; bbolt would otherwise initialise
// a zero-length file as a new database, i.e. write to it.
var errEmptyFile = errors.New("the file is empty")

// openExisting is bbolt's OpenFile hook: it never creates the file (new
// state files are made by createFile) and refuses an empty one, or one
// bbolt would read past the end of (see checkBoltFile). Checking before
// bbolt's flock is safe: bbolt grows the file before it writes a meta page
// that uses the new pages, and never shrinks it.
func openExisting(name string, flag int, perm os.FileMode, walk bool) (*os.File, error) {
	f, err := os.OpenFile(name, flag&^os.O_CREATE, perm)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if fi.Size() == 0 {
		f.Close()
		return nil, errEmptyFile
	}
	if err := checkBoltFile(f, fi.Size(), walk); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// openDB opens the existing state file at path. A missing file is reported
// as an error satisfying errors.Is(err, fs.ErrNotExist). walk checks every
// page in use first (see pageWalk): needed before a write, or a read of
// every record; one lookup does without (see lookup).
func openDB(ctx context.Context, path string, readOnly, walk bool) (db *bolt.DB, err error) {
	timeout := fileLockTimeout
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	if timeout <= 0 {
		return nil, context.DeadlineExceeded
	}
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, &CorruptError{Path: path, Reason: "bbolt could not open it", Err: fmt.Errorf("panic: %v", r)}
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	db, err = bolt.Open(path, 0o600, &bolt.Options{
		Timeout:  timeout,
		ReadOnly: readOnly,
		OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
			return openExisting(name, flag, perm, walk)
		},
		NoStatistics: true,
	})
	var damaged *damagedFileError
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, err
	case errors.Is(err, errEmptyFile):
		return nil, &CorruptError{Path: path, Reason: "the file is empty"}
	case errors.As(err, &damaged):
		return nil, &CorruptError{Path: path, Reason: damaged.reason}
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrVersionMismatch):
		return nil, &CorruptError{Path: path, Reason: "not a bbolt database", Err: err}
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("open state %s: another process kept the file locked for %s", path, timeout)
	default:
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
}

func closeDB(db *bolt.DB, path string, err *error) {
	if cerr := db.Close(); cerr != nil && *err == nil {
		*err = fmt.Errorf("close state %s: %w", path, cerr)
	}
}

// guard turns a bbolt panic (it panics on some corrupt pages) into an
// error. A damaged page can also send bbolt to an address outside the
// mapped file: SetPanicOnFault (per goroutine, restored on return) makes
// that fault a panic too, where by default it kills the process. bbolt
// runs a transaction's reads on the calling goroutine, so this covers them.
func guard(path string, f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &CorruptError{Path: path, Reason: "bbolt could not read it", Err: fmt.Errorf("panic: %v", r)}
		}
	}()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	return f()
}

// view, viewAll and update are the package's functions of the same name
// behind s.tx (see Store), with one more step: while this Store has the
// file open for a write, its reads run on that same handle (bbolt's
// readers see the last commit beside a write transaction), so a read in
// this process never waits for a write's fsync.
func (s *Store) view(ctx context.Context, fn func(*bolt.Tx) error) (bool, error) {
	return s.viewWalk(ctx, false, fn)
}

func (s *Store) viewAll(ctx context.Context, fn func(*bolt.Tx) error) (bool, error) {
	return s.viewWalk(ctx, true, fn)
}

func (s *Store) viewWalk(ctx context.Context, walk bool, fn func(*bolt.Tx) error) (found bool, err error) {
	s.hmu.Lock()
	if db := s.shared; db != nil {
		s.sharedUsers.Add(1)
		s.hmu.Unlock()
		defer s.sharedUsers.Done()
		return true, withFix(s.path, guard(s.path, func() error { return db.View(fn) }))
	}
	s.hmu.Unlock()
	s.tx.RLock()
	defer s.tx.RUnlock()
	db, joined, err := s.joinRead(ctx, walk)
	if !joined {
		return viewFile(ctx, s.path, walk, fn)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, withFix(s.path, err)
	}
	defer s.leaveRead(&err)
	return true, withFix(s.path, guard(s.path, func() error { return db.View(fn) }))
}

// joinRead opens or joins the read-only handle that concurrent reads
// share: one open, flock and mmap for a burst of reads rather than one
// each. The last read out closes it (leaveRead), so a write, which waits
// for every read (s.tx), never meets this process's own shared flock.
// joined is false for a read that must walk every page (viewAll) when
// the handle's open did not: it opens a handle of its own.
func (s *Store) joinRead(ctx context.Context, walk bool) (db *bolt.DB, joined bool, err error) {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	if s.rdb != nil {
		if walk && !s.rdbWalked {
			return nil, false, nil
		}
		s.rdbUsers++
		return s.rdb, true, nil
	}
	db, err = openDB(ctx, s.path, true, walk)
	if err != nil {
		return nil, true, err
	}
	s.rdb, s.rdbWalked, s.rdbUsers = db, walk, 1
	return db, true, nil
}

func (s *Store) leaveRead(err *error) {
	s.hmu.Lock()
	defer s.hmu.Unlock()
	if s.rdbUsers--; s.rdbUsers == 0 {
		closeDB(s.rdb, s.path, err)
		s.rdb = nil
	}
}

func (s *Store) update(ctx context.Context, fn func(*bolt.Tx) error) (err error) {
	s.tx.Lock()
	defer s.tx.Unlock()
	defer func() { err = withFix(s.path, err) }()
	db, err := openDB(ctx, s.path, false, true)
	if err != nil {
		return err
	}
	s.hmu.Lock()
	s.shared = db
	s.hmu.Unlock()
	defer func() {
		// No read attaches from here on; those attached finish first.
		s.hmu.Lock()
		s.shared = nil
		s.hmu.Unlock()
		s.sharedUsers.Wait()
		closeDB(db, s.path, &err)
	}()
	err = guard(s.path, func() error { return db.Update(fn) })
	if errors.Is(err, errNoChange) {
		return nil
	}
	return err
}

// view runs fn in one read-only transaction on a read-only open of path.
// found is false, with no error, when the file does not exist.
func view(ctx context.Context, path string, fn func(*bolt.Tx) error) (found bool, err error) {
	return viewFile(ctx, path, false, fn)
}

// viewAll is view for a transaction that reads every page.
func viewAll(ctx context.Context, path string, fn func(*bolt.Tx) error) (found bool, err error) {
	return viewFile(ctx, path, true, fn)
}

func viewFile(ctx context.Context, path string, walk bool, fn func(*bolt.Tx) error) (found bool, err error) {
	defer func() { err = withFix(path, err) }()
	db, err := openDB(ctx, path, true, walk)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	defer closeDB(db, path, &err)
	return true, guard(path, func() error { return db.View(fn) })
}

// errNoChange rolls back an update that turned out to change nothing, so
// that bbolt does not commit (and write) an empty transaction.
var errNoChange = errors.New("no change")

// update runs fn in one read-write transaction. A missing file is reported
// as fs.ErrNotExist; errNoChange from fn is not an error.
func update(ctx context.Context, path string, fn func(*bolt.Tx) error) (err error) {
	defer func() { err = withFix(path, err) }()
	db, err := openDB(ctx, path, false, true)
	if err != nil {
		return err
	}
	defer closeDB(db, path, &err)
	err = guard(path, func() error { return db.Update(fn) })
	if errors.Is(err, errNoChange) {
		return nil
	}
	return err
}

// createFile makes a new, empty state file at path with a fresh lineage.
// The file is built under a temporary name and hard-linked into place, so
// the state file either does not exist or is complete (a crash leaves no
// half-made file), and a state another process created meanwhile is never
// replaced: created is then false and that file is used instead.
func createFile(ctx context.Context, path string) (created bool, err error) {
	return createFileWith(ctx, path, newID())
}

// createFileWith is createFile with a given lineage (state migrate).
func createFileWith(ctx context.Context, path, lineage string) (created bool, err error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return false, fmt.Errorf("create state folder %s: %w", dir, err)
	}
	f, err := os.CreateTemp(dir, filepath.Base(path)+".new-*") // mode 0600
	if err != nil {
		return false, fmt.Errorf("create state %s: %w", path, err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	if err := f.Close(); err != nil {
		return false, fmt.Errorf("create state %s: %w", path, err)
	}
	db, err := bolt.Open(tmp, 0o600, &bolt.Options{Timeout: fileLockTimeout, NoStatistics: true})
	if err != nil {
		return false, fmt.Errorf("create state %s: %w", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error { return initMeta(tx, lineage) })
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, fmt.Errorf("create state %s: %w", path, err)
	}
	if err := os.Link(tmp, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return false, nil
		}
		return false, fmt.Errorf("create state %s: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		return true, fmt.Errorf("create state %s: %w", path, err)
	}
	return true, nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// writeBackup copies the state as tx sees it to "<path>.backup". It runs
// inside the write transaction before anything changes, so the copy is
// exactly the pre-write state. The copy is written under a temporary name
// and renamed, so a failed backup never clobbers the previous one.
func writeBackup(tx *bolt.Tx, path string) (err error) {
	dst := BackupPath(path)
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(dst)+".tmp-*") // mode 0600
	if err != nil {
		return fmt.Errorf("back up state to %s: %w", dst, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
			err = fmt.Errorf("back up state to %s: %w", dst, err)
		}
	}()
	if _, err := tx.WriteTo(f); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), dst)
}
