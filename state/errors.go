package state

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// CorruptError reports a file that is not a usable sandboxer state: random
// bytes, an empty or truncated file, a bbolt database of some other
// program, or a record that does not decode. The file is left untouched.
type CorruptError struct {
	Path string
	// Address is set when one record is at fault rather than the file.
	Address string
	Reason  string
	Err     error
	// Fix tells the user how to get out: forget the record, or restore
	// the backup (named when one exists). Empty when not worked out.
	Fix string
	// Backend names a state that is not a file (Backend.Describe); then
	// it is named instead of Path.
	Backend string
}

func (e *CorruptError) Error() string {
	msg := fmt.Sprintf("%s is damaged", stateName(e.Path, e.Backend))
	if e.Address != "" {
		msg = fmt.Sprintf("%s: record %q is damaged", stateName(e.Path, e.Backend), e.Address)
	}
	msg += ": " + e.Reason
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	if e.Fix != "" {
		msg += "; " + e.Fix
	}
	return msg
}

// stateName names a state in messages: "state file PATH", or what a
// backend that is not a file calls itself.
func stateName(path, backend string) string {
	if backend != "" {
		return backend
	}
	return "state file " + path
}

// BackupPath is where a Store copies the state file before its first
// write (see Store).
func BackupPath(path string) string { return path + ".backup" }

// withFix fills in the Fix of a *CorruptError in err, looking for the
// backup of path. It returns err.
func withFix(path string, err error) error {
	var ce *CorruptError
	if !errors.As(err, &ce) || ce.Fix != "" {
		return err
	}
	backup := BackupPath(path)
	_, statErr := os.Stat(backup)
	hasBackup := statErr == nil
	p, b, aside := shellQuote(path), shellQuote(backup), shellQuote(path+".damaged")
	restore := fmt.Sprintf("restore the copy taken before the last change with: mv %s %s && cp %s %s", p, aside, b, p)
	forget := ""
	if ce.Address != "" {
		forget = fmt.Sprintf("forget the record with: sandboxer state rm %s (sandboxer reap then removes its containers)", shellQuote(ce.Address))
	}
	switch {
	case forget != "" && hasBackup:
		ce.Fix = forget + "; or " + restore
	case forget != "":
		ce.Fix = forget
	case hasBackup:
		ce.Fix = restore
	default:
		ce.Fix = fmt.Sprintf("there is no backup (%s); to start again with an empty state: mv %s %s (the sandboxes it recorded are then no longer tracked)", backup, p, aside)
	}
	return err
}

// shellQuote quotes s for a POSIX shell when it needs it, so that the
// commands in a Fix can be pasted as they are (addresses hold [" "]).
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/+,:@%=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (e *CorruptError) Unwrap() error { return e.Err }

// FutureSchemaError reports a file or record written by a newer sandboxer
// than this one. Reading it could drop fields the newer version relies on,
// so it is refused rather than guessed at.
type FutureSchemaError struct {
	Path string
	// Address is empty when the file's own schema version is the newer one.
	Address   string
	Version   int
	Supported int
	// Backend: as CorruptError's.
	Backend string
}

func (e *FutureSchemaError) Error() string {
	what := "the file"
	if e.Address != "" {
		what = fmt.Sprintf("record %q", e.Address)
	}
	fix := "upgrade sandboxer"
	if e.Address != "" {
		fix += fmt.Sprintf(", or forget the record with: sandboxer state rm %s", shellQuote(e.Address))
	}
	return fmt.Sprintf("%s: %s has schema version %d, written by a newer sandboxer (this one reads up to version %d); %s",
		stateName(e.Path, e.Backend), what, e.Version, e.Supported, fix)
}

// LineageError reports that the state file was replaced underneath this
// Store: its lineage is not the one the Store saw first. Writing would mix
// two unrelated histories, so the write is refused.
type LineageError struct {
	Path string
	// Want is the lineage this Store saw first; Got is the file's lineage
	// now ("" when the file has disappeared).
	Want, Got string
	// Backend: as CorruptError's.
	Backend string
}

func (e *LineageError) Error() string {
	if e.Got == "" {
		return fmt.Sprintf("%s disappeared during this command (it had lineage %s); refusing to write", stateName(e.Path, e.Backend), e.Want)
	}
	return fmt.Sprintf("%s was replaced during this command (lineage %s, was %s); refusing to write", stateName(e.Path, e.Backend), e.Got, e.Want)
}

// StaleError reports that the state moved on since a saved plan was made
// against it (see Store.ExpectLineage).
type StaleError struct {
	Path                    string
	WantLineage, GotLineage string
	WantSerial, GotSerial   uint64
	// Backend: as CorruptError's.
	Backend string
}

func (e *StaleError) Error() string {
	if e.WantLineage != e.GotLineage {
		return fmt.Sprintf("%s is a different state than the plan was made for (lineage %s, plan expects %s)",
			stateName(e.Path, e.Backend), orNone(e.GotLineage), orNone(e.WantLineage))
	}
	return fmt.Sprintf("%s changed since the plan was made (serial %d, plan expects %d)",
		stateName(e.Path, e.Backend), e.GotSerial, e.WantSerial)
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
