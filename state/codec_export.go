package state

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// Codec is how a backend other than the bbolt file stores records: the
// same JSON, schema versions and upgrades, and the same sealing of
// secrets, so that states move between backends record by record.
type Codec struct {
	// Where names the state in errors (Backend.Describe).
	Where string
	// Keys seal what Encode writes and open what Decode reads.
	Keys *Keyring
}

// Encode returns the stored bytes of rec, its secrets sealed under the
// current key. rec is not modified.
func (c Codec) Encode(rec *Record) ([]byte, error) {
	if rec == nil || rec.Address == "" {
		return nil, errors.New("record has no address")
	}
	sealed, err := sealRecord(rec, c.Keys)
	if err != nil {
		return nil, fmt.Errorf("seal %s: %w", rec.Address, err)
	}
	return encodeRecord(sealed)
}

// Decode reads the record stored at addr: a *FutureSchemaError for one a
// newer sandboxer wrote, a *KeyError for one sealed with a key the
// keyring lacks, a *CorruptError for anything else unreadable.
func (c Codec) Decode(addr string, data []byte) (*Record, error) {
	rec, err := decodeRecord(data, SchemaVersion, recordUpgrades(), nil)
	var future futureRecordError
	switch {
	case errors.As(err, &future):
		return nil, &FutureSchemaError{Backend: c.Where, Address: addr, Version: future.version, Supported: SchemaVersion}
	case err != nil:
		return nil, &CorruptError{Backend: c.Where, Address: addr, Reason: "it does not decode", Err: err,
			Fix: fmt.Sprintf("forget the record with: sandboxer state rm %s", shellQuote(addr))}
	case rec.Address != addr:
		return nil, &CorruptError{Backend: c.Where, Address: addr, Reason: fmt.Sprintf("it is stored under %q but names itself %q", addr, rec.Address)}
	}
	if err := unsealRecord(c.Where, rec, c.Keys); err != nil {
		return nil, err
	}
	return rec, nil
}

// Reseal returns data re-encoded under the keyring's current key (in the
// clear without one), and whether that changes anything.
func (c Codec) Reseal(addr string, data []byte) ([]byte, bool, error) {
	raw, err := decodeRecord(data, SchemaVersion, recordUpgrades(), nil)
	if err != nil {
		_, derr := c.Decode(addr, data)
		return nil, false, derr
	}
	if !needsReseal(raw, c.Keys.CurrentKeyID()) {
		return data, false, nil
	}
	rec, err := c.Decode(addr, data)
	if err != nil {
		return nil, false, err
	}
	out, err := c.Encode(rec)
	return out, err == nil, err
}

// NeedsSalt reports whether a passphrase is configured: the state must
// then hold a salt (see UseSalt) before anything is sealed or opened.
func (k *Keyring) NeedsSalt() bool { return k.needsSalt() }

// UseSalt gives the keyring the state's key-derivation salt.
func (k *Keyring) UseSalt(salt []byte) { k.useSalt(salt) }

// NewSalt returns a random salt for a new state.
func NewSalt() []byte { return newSalt() }

// NewLineage returns a random lineage for a new state.
func NewLineage() string { return newID() }

// NewLockInfo describes a lock this process is taking now, for a
// backend's holder record.
func NewLockInfo(operation, where, addr string) LockInfo {
	return LockInfo{ID: newID(), Operation: operation, PID: os.Getpid(), Host: hostname(), Who: whoAmI(),
		Since: time.Now().UTC().Round(0), Path: where, Address: addr}
}
