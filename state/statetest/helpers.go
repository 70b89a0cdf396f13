package statetest

import (
	"crypto/rand"
	"encoding/base64"
	"strings"
)

func newRawKey() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

func containsAny(haystack, needle string) bool {
	return needle != "" && strings.Contains(haystack, needle)
}
