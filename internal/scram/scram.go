// Package scram computes the SCRAM-SHA-256 verifiers PostgreSQL stores for
// passwords, so a role can be given a password without the clear text
// ever reaching the server. It does no I/O.
package scram

import (
	"crypto/hmac"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
)

// scramIterations matches PostgreSQL's default scram_iterations.
const scramIterations = 4096

// Verifier computes the SCRAM-SHA-256 verifier PostgreSQL stores for a
// password (RFC 5802/7677, PostgreSQL's "SCRAM-SHA-256$iter:salt$stored:server"
// form). Passing it to CREATE ROLE … PASSWORD keeps the clear-text password
// out of the server: out of statement logs and out of pg_stat_activity.
// Our passwords are ASCII, so SASLprep is the identity.
func Verifier(password string) (string, error) {
	salt := make([]byte, 16)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("generate salt: %w", err)
	}
	salted, err := pbkdf2.Key(sha256.New, password, salt, scramIterations, sha256.Size)
	if err != nil {
		return "", fmt.Errorf("derive key: %w", err)
	}
	clientKey := hmacSHA256(salted, "Client Key")
	storedKey := sha256.Sum256(clientKey)
	serverKey := hmacSHA256(salted, "Server Key")
	b64 := base64.StdEncoding.EncodeToString
	return fmt.Sprintf("SCRAM-SHA-256$%d:%s$%s:%s",
		scramIterations, b64(salt), b64(storedKey[:]), b64(serverKey)), nil
}

func hmacSHA256(key []byte, msg string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msg))
	return m.Sum(nil)
}
