package kit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sandboxer/sandboxer/state"
)

// caFileExt ends every CA file's name: dir/<instance name>.ca.pem.
const caFileExt = ".ca.pem"

// WriteCAFile writes the CA for clients (sslrootcert, redis-cli --cacert)
// as dir/name.ca.pem, mode 0600 in a 0700 directory, and returns its
// absolute path. The file appears whole or not at all (a rename).
func WriteCAFile(dir, name string, caPEM []byte) (string, error) {
	if dir == "" {
		return "", errors.New("TLS needs a directory for CA files, and the provider has none")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(abs, 0o700); err != nil {
		return "", fmt.Errorf("create CA directory: %w", err)
	}
	path := filepath.Join(abs, name+caFileExt)
	tmp, err := os.CreateTemp(abs, ".ca-*")
	if err != nil {
		return "", fmt.Errorf("write CA file: %w", err)
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(caPEM); err != nil {
		tmp.Close()
		return "", fmt.Errorf("write CA file: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return "", fmt.Errorf("write CA file: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return "", fmt.Errorf("write CA file: %w", err)
	}
	return path, nil
}

// RemoveCAFiles removes the CA files recorded for an instance (its
// services share one: each is removed once); one already gone counts as
// removed.
func RemoveCAFiles(rec *state.Record) error {
	var errs []error
	seen := map[string]bool{}
	for _, c := range rec.Credentials {
		if c.CAFile == "" || seen[c.CAFile] {
			continue
		}
		seen[c.CAFile] = true
		if err := os.Remove(c.CAFile); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove CA file: %w", err))
		}
	}
	return errors.Join(errs...)
}

// RemoveCAFile removes the CA file dir/name.ca.pem of an instance no
// record names any more (the orphan sweep); none counts as removed, and
// so does any with no dir or name to go by.
func RemoveCAFile(dir, name string) error {
	if dir == "" || name == "" {
		return nil
	}
	if err := os.Remove(filepath.Join(dir, name+caFileExt)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove CA file: %w", err)
	}
	return nil
}
