package kit

import (
	"crypto/sha256"
	"encoding/hex"
)

// HashParts is the hex SHA-256 of parts, each string ended by a 0 byte and
// each part by a 1 byte, so no two different lists of lists hash alike by
// moving a string across a boundary. Both runtimes key their PostgreSQL
// templates with it.
func HashParts(parts ...[]string) string {
	h := sha256.New()
	for _, part := range parts {
		for _, s := range part {
			h.Write([]byte(s))
			h.Write([]byte{0})
		}
		h.Write([]byte{1})
	}
	return hex.EncodeToString(h.Sum(nil))
}
