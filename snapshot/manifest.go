package snapshot

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// ManifestFormat identifies manifest files; bump it when the layout changes.
const ManifestFormat = "sandboxer-snapshot/1"

// Manifest describes one snapshot. It holds no credential: only what was
// saved, from where, and how to check the files are intact.
type Manifest struct {
	Format    string    `json:"format"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"created_at"`
	Source    Source    `json:"source"`
	// Services saved, sorted.
	Services []string `json:"services"`
	// Features the source instance had provisioned, per service: an
	// instance restored from this snapshot must have all of them.
	Features map[string][]string `json:"features"`
	Files    []File              `json:"files"`
}

// Source is the instance a snapshot was taken from.
type Source struct {
	Address    string `json:"address"`
	Project    string `json:"project,omitempty"`
	Generation int    `json:"generation"`
}

// File is one service's saved data.
type File struct {
	Service string `json:"service"`
	Name    string `json:"name"`   // file name inside the snapshot directory
	Format  string `json:"format"` // see the Format* constants
	Size    int64  `json:"size"`
	SHA256  string `json:"sha256"`
}

// The formats of service files.
const (
	// FormatPGCustom is pg_dump's custom format (-Fc), read by pg_restore.
	FormatPGCustom = "pg_dump-custom"
	// FormatRedisDump is JSON lines, one key each: its database, name, TTL
	// and the value as Redis's DUMP serialises it (RDB encoding with the
	// RDB version and a CRC64), loaded back with RESTORE.
	FormatRedisDump = "redis-dump-jsonl"
)

// File returns the file of a service.
func (m *Manifest) File(service string) (File, bool) {
	i := slices.IndexFunc(m.Files, func(f File) bool { return f.Service == service })
	if i < 0 {
		return File{}, false
	}
	return m.Files[i], true
}

// Size is the total size of the snapshot's files.
func (m *Manifest) Size() int64 {
	var n int64
	for _, f := range m.Files {
		n += f.Size
	}
	return n
}

// Digest identifies the snapshot's content: the checksums of its files,
// in service order. Two snapshots with equal data have equal digests.
func (m *Manifest) Digest() string {
	parts := make([]string, 0, len(m.Files))
	for _, f := range m.Files {
		parts = append(parts, f.Service+":"+f.SHA256)
	}
	slices.Sort(parts)
	return sha256Hex([]byte(strings.Join(parts, "\n")))
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,62}$`)

// CheckName validates a snapshot name: 1–63 of [A-Za-z0-9_.-], starting
// with a letter or digit, so it is always a safe directory name.
func CheckName(name string) error {
	if !nameRE.MatchString(name) {
		return fmt.Errorf("snapshot name %q: must be 1-63 of A-Z a-z 0-9 _ . - and start with a letter or digit", name)
	}
	return nil
}
