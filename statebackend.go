package sandboxer

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
	"github.com/sandboxer/sandboxer/state/pgstate"
)

// EnvBackendURL chooses a PostgreSQL state (a postgres:// URL) instead of
// the state file, for the library as for the CLI. The URL holds a
// password: it is never printed.
const EnvBackendURL = "SANDBOXER_BACKEND_URL"

// BackendInput is what chooses the state backend: a front end's flags,
// the environment and the configuration's backend block.
type BackendInput struct {
	// Dir is the configuration directory.
	Dir string
	// Flag is a backend named on the command line (the CLI's --backend):
	// a postgres:// URL, or "file".
	Flag string
	// StatePath is a state file named on the command line (--state, or
	// Options.StatePath), relative to Dir; "" for none.
	StatePath string
	// Decl is the configuration's backend block, nil when none.
	Decl *config.BackendDecl
	// Getenv reads the environment (SANDBOXER_BACKEND_URL, the block's
	// password_env).
	Getenv func(string) string
	// Opened: the caller opened the state itself (Options.Backend; the
	// CLI after its own ChooseBackend): only StatePath is wanted, for
	// snapshots and CA files; nothing is compared or recorded.
	Opened bool
}

// BackendChoice is the state backend chosen, and what chose it.
type BackendChoice struct {
	// URL is the PostgreSQL backend's URL, with its password; "" for the
	// state file.
	URL string
	// StatePath is the state file when URL is "", and where snapshots
	// and CA files are kept beside in any case.
	StatePath string
	// Source says what chose it: "--backend", SANDBOXER_BACKEND_URL,
	// "--state", "the backend block at FILE:LINE,COL-COL" or "the
	// default".
	Source string
	// ByConfig: the backend block or the default chose (no flag or
	// variable did), so a change of it since the last use is detected.
	ByConfig bool
}

// ChooseBackend is the one resolution of the state backend, for every
// command and for the library: Flag, else SANDBOXER_BACKEND_URL, else the
// backend block, else the state file; the flag and the variable win, as
// Terraform's -backend-config does. StatePath (--state) names the file
// when the choice is the file; with a file block and no StatePath, the
// block's path does.
//
// When the block or the default chose, the choice is compared with the
// one recorded at the last use (.sandboxer/backend.json): a different one
// is a *BackendChangedError, returned with the choice, saying to run
// sandboxer state migrate. The first use records it.
func ChooseBackend(in BackendInput) (BackendChoice, error) {
	getenv := in.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	c := BackendChoice{StatePath: filepath.Join(in.Dir, ".sandboxer", "state.db"), Source: "the default", ByConfig: true}
	if in.Decl != nil && in.Decl.Type == "file" && in.Decl.Path != "" {
		c.StatePath = joinDir(in.Dir, in.Decl.Path)
	}
	if in.StatePath != "" {
		c.StatePath = joinDir(in.Dir, in.StatePath)
	}
	where, what := "", ""
	switch {
	case in.Flag != "":
		where, what, c.Source, c.ByConfig = in.Flag, "--backend", "--backend", false
	case getenv(EnvBackendURL) != "":
		where, what, c.Source, c.ByConfig = getenv(EnvBackendURL), EnvBackendURL, EnvBackendURL, false
	case in.Decl != nil:
		where, what, c.Source = in.Decl.Where(getenv), "the backend block", fmt.Sprintf("the backend block at %s", in.Decl.DeclRange)
	}
	switch {
	case where == "" || where == "file":
		if in.StatePath != "" {
			c.Source, c.ByConfig = "--state", false
		}
	case strings.HasPrefix(where, "postgres://") || strings.HasPrefix(where, "postgresql://"):
		if in.StatePath != "" {
			return c, fmt.Errorf("--state names a state file, but a PostgreSQL backend is chosen (by %s); use one of them", what)
		}
		c.URL = where
	default:
		// Not echoed: it may hold a password.
		return c, errors.New("the state backend (--backend or " + EnvBackendURL + ") must be a postgres:// URL, or \"file\" for the state file")
	}
	if !c.ByConfig || in.Opened {
		return c, nil
	}
	return c, checkBackendRecord(in.Dir, c, in.Decl, getenv)
}

func joinDir(dir, p string) string {
	if filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(dir, p)
}

// backendRecord is the backend a configuration directory last used when
// its block or the default chose (Terraform keeps its backend settings in
// .terraform/ for the same reason): never a password.
type backendRecord struct {
	Type        string `json:"type"` // "file" or "postgres"
	Path        string `json:"path,omitempty"`
	URL         string `json:"url,omitempty"`
	PasswordEnv string `json:"password_env,omitempty"`
	// MigratedTo are the backends state migrate copied this state to
	// since (key): a configuration that chooses one of them next has
	// not lost its state.
	MigratedTo []string `json:"migrated_to,omitempty"`
}

func (r backendRecord) key() string {
	if r.Type == "file" {
		return "file:" + r.Path
	}
	return "postgres:" + r.URL
}

// BackendRecordFile is where the last used backend is recorded, under
// the configuration directory.
const BackendRecordFile = ".sandboxer/backend.json"

func recordOf(dir string, c BackendChoice, decl *config.BackendDecl) backendRecord {
	if c.URL == "" {
		p := c.StatePath
		if rel, err := filepath.Rel(dir, p); err == nil && !strings.HasPrefix(rel, "..") {
			p = filepath.ToSlash(rel)
		}
		return backendRecord{Type: "file", Path: p}
	}
	r := backendRecord{Type: "postgres", URL: passwordless(c.URL)}
	if decl != nil && decl.Type == "postgres" {
		r.PasswordEnv = decl.PasswordEnv
	}
	return r
}

// passwordless is a PostgreSQL URL without its password (in the user
// part or as a password parameter), for the record and for comparing.
func passwordless(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return ""
	}
	if p.User != nil {
		p.User = url.User(p.User.Username())
	}
	q := p.Query()
	if q.Has("password") {
		q.Del("password")
		p.RawQuery = q.Encode()
	}
	return p.String()
}

func (r backendRecord) describe() string {
	if r.Type == "file" {
		return "the state file " + r.Path
	}
	return "the PostgreSQL state " + redactURL(r.URL)
}

// where is the recorded backend as --backend takes it.
func (r backendRecord) where(getenv func(string) string) string {
	if r.Type == "file" {
		return "file"
	}
	return (&config.BackendDecl{Type: "postgres", URL: r.URL, PasswordEnv: r.PasswordEnv}).Where(getenv)
}

func redactURL(u string) string {
	u = strings.TrimPrefix(strings.TrimPrefix(u, "postgres://"), "postgresql://")
	u, _, _ = strings.Cut(u, "?")
	return u
}

// BackendChangedError is a backend block (or its removal) that names
// another backend than the one this configuration's state was last used
// with: the state is still there, and commands would start afresh on the
// new one. sandboxer state migrate copies it over and records the new one.
type BackendChangedError struct {
	// From is the backend last used, as --backend takes it (the URL with
	// the password from its password_env); FromPath the state file when
	// it was one.
	From, FromPath string
	Was, Now       string // descriptions, without passwords
	Dir            string
	Choice         BackendChoice
}

func (e *BackendChangedError) Error() string {
	return fmt.Sprintf("the state backend changed: this configuration's state was last used with %s, and %s now chooses %s. "+
		"Run sandboxer state migrate to copy the state there (it records the new backend), or change the configuration back. "+
		"To start afresh on the new backend instead, remove %s.", e.Was, e.Choice.Source, e.Now, filepath.Join(e.Dir, BackendRecordFile))
}

// checkBackendRecord compares the choice with the recorded one, and
// records it when there is none yet.
func checkBackendRecord(dir string, c BackendChoice, decl *config.BackendDecl, getenv func(string) string) error {
	now := recordOf(dir, c, decl)
	path := filepath.Join(dir, BackendRecordFile)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return RecordBackend(dir, c, decl) // the first use
	case err != nil:
		return fmt.Errorf("read %s: %w", path, err)
	}
	var was backendRecord
	if err := json.Unmarshal(b, &was); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if was.key() == now.key() {
		if was.PasswordEnv != now.PasswordEnv {
			return RecordBackend(dir, c, decl)
		}
		return nil
	}
	if slices.Contains(was.MigratedTo, now.key()) {
		return RecordBackend(dir, c, decl) // the state was copied there: now the one used
	}
	e := &BackendChangedError{Was: was.describe(), Now: now.describe(), Dir: dir, Choice: c}
	e.From = was.where(getenv)
	if was.Type == "file" {
		e.FromPath = joinDir(dir, was.Path)
	}
	return e
}

// RecordBackend records c as the backend the configuration directory
// uses (after state migrate moved its state there).
func RecordBackend(dir string, c BackendChoice, decl *config.BackendDecl) error {
	path := filepath.Join(dir, BackendRecordFile)
	b, err := json.MarshalIndent(recordOf(dir, c, decl), "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o600)
}

// RecordMigration notes that state migrate copied the configuration
// directory's state to dst, so that a configuration that chooses dst
// next is not told its backend changed.
func RecordMigration(dir string, dst BackendChoice) error {
	path := filepath.Join(dir, BackendRecordFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	var r backendRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	k := recordOf(dir, dst, nil).key()
	if k == r.key() || slices.Contains(r.MigratedTo, k) {
		return nil
	}
	r.MigratedTo = append(r.MigratedTo, k)
	out, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(out, '\n'), 0o600)
}

// openBackend opens the chosen state with the key state.KeyringFromEnv
// reads, so the library and the CLI seal and open one state alike. A bad
// key gives a backend that fails every call with the reason.
func openBackend(c BackendChoice, getenv func(string) string) state.Backend {
	keys, err := state.KeyringFromEnv(getenv)
	if err != nil {
		return state.Failing(err)
	}
	if c.URL == "" {
		return state.Open(c.StatePath, state.WithKeyring(keys))
	}
	return pgstate.OpenURL(c.URL, keys)
}

// lookupEnv reads name from a KEY=VALUE list, the last one winning.
func lookupEnv(environ []string, name string) string {
	for i := len(environ) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(environ[i], name+"="); ok {
			return v
		}
	}
	return ""
}
