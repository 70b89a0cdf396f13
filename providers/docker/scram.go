package docker

import "github.com/sandboxer/sandboxer/internal/scram"

// scramVerifier is the SCRAM-SHA-256 verifier PostgreSQL stores for a
// password (internal/scram): passing it to CREATE ROLE … PASSWORD keeps
// the clear-text password out of the server's logs.
func scramVerifier(password string) (string, error) { return scram.Verifier(password) }
