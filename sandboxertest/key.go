package sandboxertest

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxKey is the longest key the broker accepts.
const maxKey = 63

// DefaultKey is the key Request derives for tb: the package directory's
// name and the test's name, made key-safe, plus a short hash of the full
// directory path and test name so different packages never share one.
// It is the same on every run, which is what lets a kept instance be
// reused by the next `go test`.
func DefaultKey(tb testing.TB) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return deriveKey(wd, tb.Name()), nil
}

func deriveKey(dir, test string) string {
	sum := sha256.Sum256([]byte(dir + "\x00" + test))
	suffix := "-" + hex.EncodeToString(sum[:4])
	readable := safe(filepath.Base(dir) + "." + test)
	if max := maxKey - len(suffix); len(readable) > max {
		readable = readable[:max]
	}
	return readable + suffix
}

// safe maps s onto [A-Za-z0-9_.-], starting with a letter or digit.
func safe(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	out := b.String()
	if out == "" || !isAlnum(out[0]) {
		out = "t" + out
	}
	return out
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
