package state

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"maps"
	"strings"
)

// sealedPrefix starts a secret sealed in a record: then the key id and
// base64url(nonce || AES-256-GCM ciphertext). Passwords sandboxer makes
// are base64url/hex, so they never start with it; a record written in
// the clear is told apart by its absence.
const sealedPrefix = "sandboxer:sealed:v1:"

// KeyError reports a sealed record that cannot be opened: no key is
// configured, or not the one it was sealed with. Nothing is guessed: the
// read fails, and the message says which key is wanted.
type KeyError struct {
	// Where is the state (Backend.Describe); Address the record.
	Where, Address string
	// KeyID is the key the record was sealed with; Have the current one
	// ("" when no key is set).
	KeyID, Have string
	// Reason is set when the ciphertext itself does not open (tampered
	// with, or truncated).
	Reason string
}

func (e *KeyError) Error() string {
	if e.Reason != "" {
		return fmt.Sprintf("%s: record %q: a sealed secret does not open under key %s: %s", e.Where, e.Address, e.KeyID, e.Reason)
	}
	if e.Have == "" {
		return fmt.Sprintf("%s: record %q is encrypted (key %s) and no state key is set; set %s or %s to the key it was sealed with",
			e.Where, e.Address, e.KeyID, EnvStateKey, EnvStateKeyFile)
	}
	return fmt.Sprintf("%s: record %q is encrypted with key %s, but %s is key %s; set the key it was sealed with, or, to rotate, set %s to it and run: sandboxer state rekey",
		e.Where, e.Address, e.KeyID, EnvStateKey, e.Have, EnvStateOldKey)
}

// secretFields lists the secret fields of Credentials, for sealing: the
// two passwords. URLs are built from them on demand and never stored;
// a CA certificate is public and its private key is not kept.
func secretFields(c *Credentials) map[string]*Secret {
	return map[string]*Secret{"password": &c.Password, "admin_password": &c.AdminPassword}
}

// sealRecord returns rec with its secrets sealed under the keyring's
// current key (rec itself when there is no key). rec is not modified.
func sealRecord(rec *Record, k *Keyring) (*Record, error) {
	sk, ok, err := k.currentKey()
	if err != nil {
		return nil, err
	}
	if !ok || len(rec.Credentials) == 0 {
		return rec, nil
	}
	aead, err := newAEAD(sk.key)
	if err != nil {
		return nil, err
	}
	out := *rec
	out.Credentials = maps.Clone(rec.Credentials)
	for svc, c := range out.Credentials {
		for field, p := range secretFields(&c) {
			if *p == "" || strings.HasPrefix(string(*p), sealedPrefix) {
				continue
			}
			aad := sealAAD(rec.Address, svc, field)
			nonce := syntheticNonce(sk.key, aad, []byte(*p), aead.NonceSize())
			ct := aead.Seal(nonce, nonce, []byte(*p), aad)
			*p = Secret(sealedPrefix + sk.id + ":" + base64.RawURLEncoding.EncodeToString(ct))
		}
		out.Credentials[svc] = c
	}
	return &out, nil
}

// unsealRecord opens the sealed secrets of rec in place. A record
// written in the clear is returned as it is, with or without a key.
func unsealRecord(where string, rec *Record, k *Keyring) error {
	for svc, c := range rec.Credentials {
		changed := false
		for field, p := range secretFields(&c) {
			rest, sealed := strings.CutPrefix(string(*p), sealedPrefix)
			if !sealed {
				continue
			}
			id, b64, ok := strings.Cut(rest, ":")
			if !ok {
				return &KeyError{Where: where, Address: rec.Address, Reason: "it has no key id"}
			}
			sk, found, err := k.find(id)
			if err != nil {
				return fmt.Errorf("%s: record %q: %w", where, rec.Address, err)
			}
			if !found {
				return &KeyError{Where: where, Address: rec.Address, KeyID: id, Have: k.CurrentKeyID()}
			}
			ct, err := base64.RawURLEncoding.DecodeString(b64)
			if err != nil {
				return &KeyError{Where: where, Address: rec.Address, KeyID: id, Reason: "it is not base64"}
			}
			aead, err := newAEAD(sk.key)
			if err != nil {
				return err
			}
			if len(ct) < aead.NonceSize() {
				return &KeyError{Where: where, Address: rec.Address, KeyID: id, Reason: "it is truncated"}
			}
			pt, err := aead.Open(nil, ct[:aead.NonceSize()], ct[aead.NonceSize():], sealAAD(rec.Address, svc, field))
			if err != nil {
				return &KeyError{Where: where, Address: rec.Address, KeyID: id, Reason: "authentication failed (the record was altered or belongs elsewhere)"}
			}
			*p = Secret(pt)
			changed = true
		}
		if changed {
			rec.Credentials[svc] = c
		}
	}
	return nil
}

// sealedWith reports the key ids rec's secrets are sealed with, and
// whether any secret is in the clear.
func sealedWith(rec *Record) (ids map[string]bool, clear bool) {
	ids = map[string]bool{}
	for _, c := range rec.Credentials {
		for _, p := range secretFields(&c) {
			rest, sealed := strings.CutPrefix(string(*p), sealedPrefix)
			switch {
			case sealed:
				id, _, _ := strings.Cut(rest, ":")
				ids[id] = true
			case *p != "":
				clear = true
			}
		}
	}
	return ids, clear
}

// sealAAD binds a sealed secret to its place, so that it cannot be moved
// to another record, service or field and still open.
func sealAAD(addr, service, field string) []byte {
	return []byte("sandboxer state v1\x00" + addr + "\x00" + service + "\x00" + field)
}

// syntheticNonce derives the nonce from the key, place and plaintext
// (HMAC-SHA256, as in AES-GCM-SIV's synthetic IVs): sealing the same
// secret in the same place gives the same bytes, so an unchanged record
// stays byte-equal and the serial does not move. A nonce repeats only
// with the same plaintext, which is what GCM needs; what it gives away is
// that a secret did not change.
func syntheticNonce(key, aad, plaintext []byte, size int) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("sandboxer state nonce\x00"))
	m.Write(aad)
	m.Write([]byte{0})
	m.Write(plaintext)
	return m.Sum(nil)[:size]
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("state key: %w", err)
	}
	return cipher.NewGCM(block)
}
