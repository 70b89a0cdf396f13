package state

import (
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
)

// The environment variables a Keyring is read from (see KeyringFromEnv).
const (
	EnvStateKey        = "SANDBOXER_STATE_KEY"
	EnvStateKeyFile    = "SANDBOXER_STATE_KEY_FILE"
	EnvStateOldKey     = "SANDBOXER_STATE_OLD_KEY"
	EnvStateOldKeyFile = "SANDBOXER_STATE_OLD_KEY_FILE"
)

// PBKDF2 parameters for passphrases: OpenTofu's state encryption
// defaults (PBKDF2-HMAC-SHA512, 600,000 iterations, a 32-byte key). The
// salt is random per state and kept in its meta, so the same passphrase
// gives each state its own key.
const (
	KDFIterations = 600_000
	KDFKeyLength  = 32
	KDFSaltLength = 32
	// minPassphrase is OpenTofu's lower bound as well.
	minPassphrase = 16
)

// keySource is one configured key before it is usable: raw 32 bytes, or
// a passphrase that still needs the state's salt.
type keySource struct {
	raw        []byte
	passphrase string
	// from names where it came from, for messages ("SANDBOXER_STATE_KEY").
	from string
}

// stateKey is a usable AES-256 key and its id.
type stateKey struct {
	id  string
	key []byte
}

// Keyring holds the keys that seal the secrets in records: the current
// one, which seals what is written (none: written in the clear), and old
// ones, which only open what was sealed before a rotation. A nil
// *Keyring is an empty one. It is safe for concurrent use; a passphrase
// is derived once per salt.
type Keyring struct {
	current *keySource
	old     []keySource

	mu      sync.Mutex
	salt    []byte
	derived map[*keySource]stateKey
}

// NewKeyring makes a keyring from key values as KeyringFromEnv reads them
// (base64 or hex of 32 bytes, else a passphrase); current may be "".
func NewKeyring(current string, old ...string) (*Keyring, error) {
	k := &Keyring{}
	if current != "" {
		src, err := parseKey(current, EnvStateKey)
		if err != nil {
			return nil, err
		}
		k.current = &src
	}
	for _, o := range old {
		src, err := parseKey(o, EnvStateOldKey)
		if err != nil {
			return nil, err
		}
		k.old = append(k.old, src)
	}
	return k, nil
}

// KeyringFromEnv reads the keys from SANDBOXER_STATE_KEY or
// SANDBOXER_STATE_KEY_FILE (current) and SANDBOXER_STATE_OLD_KEY or
// SANDBOXER_STATE_OLD_KEY_FILE (an earlier key, for state rekey); getenv
// looks a variable up. With none set it returns a nil keyring: records
// are written in the clear, and sealed ones cannot be read.
func KeyringFromEnv(getenv func(string) string) (*Keyring, error) {
	cur, err := keyFromEnv(getenv, EnvStateKey, EnvStateKeyFile)
	if err != nil {
		return nil, err
	}
	old, err := keyFromEnv(getenv, EnvStateOldKey, EnvStateOldKeyFile)
	if err != nil {
		return nil, err
	}
	if cur == nil && old == nil {
		return nil, nil
	}
	k := &Keyring{current: cur}
	if old != nil {
		k.old = append(k.old, *old)
	}
	return k, nil
}

func keyFromEnv(getenv func(string) string, valueVar, fileVar string) (*keySource, error) {
	v, file := getenv(valueVar), getenv(fileVar)
	switch {
	case v != "" && file != "":
		return nil, fmt.Errorf("both %s and %s are set; set one of them", valueVar, fileVar)
	case v != "":
		src, err := parseKey(v, valueVar)
		return &src, err
	case file != "":
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("read the state key file named by %s: %w", fileVar, err)
		}
		if len(data) == KDFKeyLength { // raw key bytes
			return &keySource{raw: data, from: fileVar}, nil
		}
		src, err := parseKey(strings.TrimRight(string(data), "\r\n"), fileVar)
		return &src, err
	}
	return nil, nil
}

// parseKey takes a 32-byte key in base64 (standard or URL alphabet,
// padded or not) or hex; anything else is a passphrase. The error never
// repeats the value.
func parseKey(v, from string) (keySource, error) {
	v = strings.TrimSpace(v)
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(v); err == nil && len(b) == KDFKeyLength {
			return keySource{raw: b, from: from}, nil
		}
	}
	if b, err := hex.DecodeString(v); err == nil && len(b) == KDFKeyLength {
		return keySource{raw: b, from: from}, nil
	}
	if len(v) < minPassphrase {
		return keySource{}, fmt.Errorf("%s is neither a 32-byte key (base64 or hex) nor a passphrase of at least %d characters", from, minPassphrase)
	}
	return keySource{passphrase: v, from: from}, nil
}

// Sealing reports whether records are written sealed.
func (k *Keyring) Sealing() bool { return k != nil && k.current != nil }

// needsSalt reports whether a passphrase is configured, so the state
// needs a salt before a key can be derived.
func (k *Keyring) needsSalt() bool {
	if k == nil {
		return false
	}
	if k.current != nil && k.current.passphrase != "" {
		return true
	}
	for _, o := range k.old {
		if o.passphrase != "" {
			return true
		}
	}
	return false
}

// useSalt gives the keyring the state's salt (nil when it has none yet).
func (k *Keyring) useSalt(salt []byte) {
	if k == nil {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if string(k.salt) != string(salt) {
		k.salt = append([]byte(nil), salt...)
		k.derived = nil
	}
}

func newSalt() []byte {
	b := make([]byte, KDFSaltLength)
	_, _ = rand.Read(b)
	return b
}

// keyOf returns the usable key for src, deriving a passphrase's once.
func (k *Keyring) keyOf(src *keySource) (stateKey, error) {
	if src.raw != nil {
		return stateKey{id: keyID(src.raw), key: src.raw}, nil
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if sk, ok := k.derived[src]; ok {
		return sk, nil
	}
	if len(k.salt) == 0 {
		return stateKey{}, errors.New("the state has no key-derivation salt yet")
	}
	key, err := pbkdf2.Key(sha512.New, src.passphrase, k.salt, KDFIterations, KDFKeyLength)
	if err != nil {
		return stateKey{}, fmt.Errorf("derive the state key from %s: %w", src.from, err)
	}
	sk := stateKey{id: keyID(key), key: key}
	if k.derived == nil {
		k.derived = map[*keySource]stateKey{}
	}
	k.derived[src] = sk
	return sk, nil
}

// currentKey is the key that seals writes; ok false when there is none.
func (k *Keyring) currentKey() (sk stateKey, ok bool, err error) {
	if !k.Sealing() {
		return stateKey{}, false, nil
	}
	sk, err = k.keyOf(k.current)
	return sk, err == nil, err
}

// find returns the key with the given id among the current and old keys.
func (k *Keyring) find(id string) (stateKey, bool, error) {
	if k == nil {
		return stateKey{}, false, nil
	}
	srcs := make([]*keySource, 0, 1+len(k.old))
	if k.current != nil {
		srcs = append(srcs, k.current)
	}
	for i := range k.old {
		srcs = append(srcs, &k.old[i])
	}
	for _, src := range srcs {
		sk, err := k.keyOf(src)
		if err != nil {
			return stateKey{}, false, err
		}
		if sk.id == id {
			return sk, true, nil
		}
	}
	return stateKey{}, false, nil
}

// CurrentKeyID is the id of the key that seals writes ("" when none, or
// when a passphrase has no salt to derive with yet).
func (k *Keyring) CurrentKeyID() string {
	sk, ok, err := k.currentKey()
	if !ok || err != nil {
		return ""
	}
	return sk.id
}

// keyID names a key without revealing it: a truncated SHA-256 under a
// domain prefix, enough to tell keys apart in records and messages.
func keyID(key []byte) string {
	sum := sha256.Sum256(append([]byte("sandboxer state key id\x00"), key...))
	return hex.EncodeToString(sum[:8])
}
