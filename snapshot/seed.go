package snapshot

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/sandboxer/sandboxer/config"
	"github.com/sandboxer/sandboxer/state"
)

// SQLRunner runs SQL files in an instance's PostgreSQL database as its
// handed-out role (never as the admin: seed SQL gets no more power than
// the sandbox's users have).
type SQLRunner interface {
	RunSQL(ctx context.Context, rec *state.Record, files []SQLFile) error
}

// SQLFile is one file to run: Name is what errors call it.
type SQLFile struct {
	Name string
	Path string
}

// Mover seeds new instances and carries data across replaces for apply
// (apply.DataMover).
type Mover struct {
	Engine Engine
	// SQL runs seed files; Engine usually implements it too.
	SQL   SQLRunner
	Store Store
	// Dir is the configuration directory seed paths are relative to.
	Dir string
}

// Carry copies from's data into to.
func (m Mover) Carry(ctx context.Context, from, to *state.Record) error {
	return Carry(ctx, m.Engine, m.Store.Formats, from, to)
}

// Seed loads the seed's snapshot, then runs its SQL files in order. A
// file whose content changed since the plan was made (its digest is in
// the plan) is refused: the record would claim a seed it does not hold.
func (m Mover) Seed(ctx context.Context, rec *state.Record, seed *config.Seed) error {
	if seed == nil {
		return nil
	}
	if seed.Snapshot != "" {
		if _, err := Restore(ctx, m.Engine, m.Store, rec, seed.Snapshot); err != nil {
			return err
		}
	}
	if len(seed.SQL) == 0 {
		return nil
	}
	if !containsService(rec, "postgres") {
		return errors.New("seed_sql needs postgres, which this sandbox does not run")
	}
	if m.SQL == nil {
		return errors.New("this provider cannot run seed SQL")
	}
	files := make([]SQLFile, 0, len(seed.SQL))
	for _, f := range seed.SQL {
		p := filepath.Join(m.Dir, filepath.FromSlash(f.Path))
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("seed file %s: %w", f.Path, err)
		}
		sum := sha256.Sum256(b)
		if hex.EncodeToString(sum[:]) != f.SHA256 {
			return fmt.Errorf("seed file %s changed since the plan was made; run plan again", f.Path)
		}
		files = append(files, SQLFile{Name: f.Path, Path: p})
	}
	return m.SQL.RunSQL(ctx, rec, files)
}

func containsService(rec *state.Record, svc string) bool {
	for _, s := range rec.Services {
		if s == svc {
			return true
		}
	}
	return false
}

// CheckSeed tells, before the instance at addr is created, whether seed
// fits what it will have: the seed snapshot exists and its source had no
// service or feature the instance lacks, and seed SQL has a postgres to
// run in (apply.SeedChecker). The snapshot's files are verified when it
// is loaded.
func (m Mover) CheckSeed(ctx context.Context, addr string, services []string, features config.FeatureSet, seed *config.Seed) error {
	if seed == nil {
		return nil
	}
	if len(seed.SQL) > 0 && !slices.Contains(services, "postgres") {
		return errors.New("seed_sql needs postgres, which this sandbox does not run")
	}
	if seed.Snapshot == "" {
		return nil
	}
	man, err := m.Store.Load(seed.Snapshot)
	if err != nil {
		return err
	}
	return CheckFeatures(man, &state.Record{Address: addr, Services: services, Features: features})
}
