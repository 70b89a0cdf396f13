package state

import (
	"bytes"
	"crypto/rand"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Bucket and key names. The buckets are created once, with the file.
var (
	bucketMeta      = []byte("meta")
	bucketSandboxes = []byte("sandboxes")

	keyLineage       = []byte("lineage")
	keySerial        = []byte("serial")
	keySchemaVersion = []byte("schema_version")
	// keySalt is the PBKDF2 salt for passphrase keys (see Keyring).
	keySalt = []byte("kdf_salt")
)

// meta is the content of the meta bucket.
type meta struct {
	lineage string
	serial  uint64
	// schema is the newest record schema version written into the file; a
	// file touched by a newer sandboxer is refused as a whole.
	schema uint64
	// salt is the key-derivation salt, nil in files made before it.
	salt []byte
}

// readMeta validates that tx is a sandboxer state and returns its meta.
// Errors name path; the caller leaves the file alone.
func readMeta(tx *bolt.Tx, path string) (meta, error) {
	corrupt := func(reason string) (meta, error) {
		return meta{}, &CorruptError{Path: path, Reason: reason}
	}
	b := tx.Bucket(bucketMeta)
	if b == nil {
		return corrupt(`no "meta" bucket: not a sandboxer state file`)
	}
	if tx.Bucket(bucketSandboxes) == nil {
		return corrupt(`no "sandboxes" bucket`)
	}
	var m meta
	lineage := b.Get(keyLineage)
	if err := checkSize(tx, path, lineage); err != nil {
		return meta{}, err
	}
	m.lineage = string(lineage) // string() copies out of the mmap
	if m.lineage == "" {
		return corrupt("no lineage in the meta bucket")
	}
	var ok bool
	if m.serial, ok = getUint64(b, keySerial); !ok {
		return corrupt("the serial is not an 8-byte integer")
	}
	if m.schema, ok = getUint64(b, keySchemaVersion); !ok {
		return corrupt("the schema version is not an 8-byte integer")
	}
	if v := b.Get(keySalt); v != nil {
		if err := checkSize(tx, path, v); err != nil {
			return meta{}, err
		}
		m.salt = bytes.Clone(v)
	}
	if m.schema > SchemaVersion {
		return meta{}, &FutureSchemaError{Path: path, Version: int(m.schema), Supported: SchemaVersion}
	}
	return m, nil
}

func getUint64(b *bolt.Bucket, key []byte) (uint64, bool) {
	v := b.Get(key)
	if len(v) != 8 {
		return 0, false
	}
	return binary.BigEndian.Uint64(v), true
}

func putUint64(b *bolt.Bucket, key []byte, n uint64) error {
	return b.Put(key, binary.BigEndian.AppendUint64(nil, n))
}

// initMeta creates the buckets and meta of a new state file.
func initMeta(tx *bolt.Tx, lineage string) error {
	mb, err := tx.CreateBucket(bucketMeta)
	if err != nil {
		return err
	}
	if _, err := tx.CreateBucket(bucketSandboxes); err != nil {
		return err
	}
	if err := mb.Put(keyLineage, []byte(lineage)); err != nil {
		return err
	}
	if err := putUint64(mb, keySerial, 0); err != nil {
		return err
	}
	if err := mb.Put(keySalt, newSalt()); err != nil {
		return err
	}
	return putUint64(mb, keySchemaVersion, SchemaVersion)
}

// newID returns a random UUID (version 4), used for lineages and lock ids.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
