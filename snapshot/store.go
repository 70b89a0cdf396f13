package snapshot

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// manifestName is the manifest file inside a snapshot directory.
const manifestName = "manifest.json"

// ErrNotFound is returned (wrapped) for a snapshot that does not exist.
var ErrNotFound = errors.New("no such snapshot")

// ErrExists is returned (wrapped) when a snapshot name is taken.
var ErrExists = errors.New("snapshot already exists")

// ErrNotProvisioned is returned (wrapped) for an address with no record.
var ErrNotProvisioned = errors.New("is not provisioned")

// ChecksumError is a snapshot file whose content no longer matches the
// checksum its manifest recorded: it was damaged or edited, and loading it
// could put anything into a sandbox.
type ChecksumError struct {
	Snapshot, Service, Path string
	Want, Got               string
}

func (e *ChecksumError) Error() string {
	return fmt.Sprintf("snapshot %q is damaged: %s file %s has sha256 %s, the manifest recorded %s; nothing was loaded (take the snapshot again)",
		e.Snapshot, e.Service, e.Path, e.Got, e.Want)
}

// Store keeps snapshots as directories under Dir (normally
// .sandboxer/snapshots next to the state file): <name>/manifest.json and
// one file per service. Directories are 0700 and files 0600: the data is
// the user's, possibly sensitive, though never credentials.
type Store struct {
	Dir string
	// Formats says what each service's file holds (services.SnapshotFormats);
	// Save refuses a service it does not know.
	Formats func(service string) (FileFormat, bool)
}

// Path is the directory of a snapshot.
func (s Store) Path(name string) string { return filepath.Join(s.Dir, name) }

// Save writes a new snapshot atomically: every file goes to a temporary
// directory that is renamed into place only once complete, so a failed or
// interrupted snapshot leaves nothing a later restore could pick up. write
// is called once per service in man.Services and fills in its file.
func (s Store) Save(man *Manifest, write func(service string, w io.Writer) error) error {
	if err := CheckName(man.Name); err != nil {
		return err
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return fmt.Errorf("create snapshot directory: %w", err)
	}
	final := s.Path(man.Name)
	if _, err := os.Stat(final); err == nil {
		return fmt.Errorf("%w: %q (sandboxer snapshot rm %s, or choose another name)", ErrExists, man.Name, man.Name)
	}
	tmp := filepath.Join(s.Dir, ".tmp-"+man.Name+"-"+randomSuffix())
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return fmt.Errorf("create snapshot directory: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(tmp)
		}
	}()
	man.Format = ManifestFormat
	man.Files = nil
	for _, svc := range man.Services {
		var format FileFormat
		known := false
		if s.Formats != nil {
			format, known = s.Formats(svc)
		}
		if !known {
			return fmt.Errorf("snapshot %s: no snapshot format for service %s", man.Name, svc)
		}
		f, err := writeFile(tmp, svc, format, func(w io.Writer) error { return write(svc, w) })
		if err != nil {
			return fmt.Errorf("snapshot %s: %w", svc, err)
		}
		man.Files = append(man.Files, f)
	}
	b, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(tmp, manifestName), append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		return fmt.Errorf("store snapshot: %w", err)
	}
	ok = true
	return nil
}

// writeFile writes one service's data, hashing as it goes.
func writeFile(dir, service string, format FileFormat, write func(io.Writer) error) (File, error) {
	name := service + format.Ext
	out, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return File{}, err
	}
	h := sha256.New()
	cw := &countWriter{w: io.MultiWriter(out, h)}
	werr := write(cw)
	cerr := out.Close()
	if err := errors.Join(werr, cerr); err != nil {
		return File{}, err
	}
	return File{Service: service, Name: name, Format: format.Name, Size: cw.n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// FileFormat is what one service's snapshot file holds: the format's
// name in the manifest and the file's extension. Each service says its
// own (services.Service's SnapshotFormat).
type FileFormat struct {
	Name string // e.g. FormatPGCustom
	Ext  string // e.g. ".pgdump"
}

// Load reads a snapshot's manifest.
func (s Store) Load(name string) (*Manifest, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	b, err := os.ReadFile(filepath.Join(s.Path(name), manifestName))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("snapshot %q: %w (sandboxer snapshot list shows what there is)", name, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read snapshot %q: %w", name, err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("snapshot %q: manifest is not valid JSON: %w", name, err)
	}
	if m.Format != ManifestFormat {
		return nil, fmt.Errorf("snapshot %q: manifest format %q, want %q", name, m.Format, ManifestFormat)
	}
	if m.Name != name {
		return nil, fmt.Errorf("snapshot %q: manifest names %q", name, m.Name)
	}
	for _, f := range m.Files {
		if f.Name != filepath.Base(f.Name) || strings.HasPrefix(f.Name, ".") {
			return nil, fmt.Errorf("snapshot %q: manifest names a file outside its directory: %q", name, f.Name)
		}
	}
	return &m, nil
}

// List returns every snapshot's manifest, sorted by name. Directories that
// are not snapshots (an interrupted save) are skipped.
func (s Store) List() ([]*Manifest, error) {
	entries, err := os.ReadDir(s.Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list snapshots: %w", err)
	}
	var out []*Manifest
	for _, e := range entries {
		if !e.IsDir() || CheckName(e.Name()) != nil {
			continue
		}
		m, err := s.Load(e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Remove deletes a snapshot. Removing one that does not exist is an error,
// so a typo is not silently "done".
func (s Store) Remove(name string) error {
	if _, err := s.Load(name); err != nil {
		return err
	}
	return os.RemoveAll(s.Path(name))
}

// Verify checks a service file against its manifest checksum and returns
// its path. Every load calls it first, so a damaged file is refused
// before anything in the sandbox changes.
func (s Store) Verify(m *Manifest, service string) (string, error) {
	f, ok := m.File(service)
	if !ok {
		return "", fmt.Errorf("snapshot %q has no %s data", m.Name, service)
	}
	p := filepath.Join(s.Path(m.Name), f.Name)
	in, err := os.Open(p)
	if err != nil {
		return "", fmt.Errorf("snapshot %q: %w", m.Name, err)
	}
	defer in.Close()
	h := sha256.New()
	if _, err := io.Copy(h, in); err != nil {
		return "", fmt.Errorf("snapshot %q: read %s: %w", m.Name, f.Name, err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != f.SHA256 {
		return "", &ChecksumError{Snapshot: m.Name, Service: service, Path: p, Want: f.SHA256, Got: got}
	}
	return p, nil
}

type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func randomSuffix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
