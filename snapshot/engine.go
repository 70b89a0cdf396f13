package snapshot

import (
	"context"
	"io"

	"github.com/sandboxer/sandboxer/state"
)

// Engine moves one service's data out of and into a live instance. The
// docker provider implements it by running the engines' own tools inside
// the instance's containers, so no client tools are needed on the host.
type Engine interface {
	// Dump writes the data of one service of rec to w, in that service's
	// format (FormatPGCustom, FormatRedisDump).
	Dump(ctx context.Context, rec *state.Record, service string, w io.Writer) error
	// Load replaces the data of one service of rec with d, owned by the
	// instance's handed-out user. A failed Load leaves the live data as it
	// was wherever the engine allows (PostgreSQL: always).
	Load(ctx context.Context, rec *state.Record, service string, d Data) error
	// Keep prepares d inside the instance so that a later Load of the same
	// Data.Key is fast, without touching the live data. Engines that load
	// fast anyway do nothing.
	Keep(ctx context.Context, rec *state.Record, service string, d Data) error
}

// Data is one service's dump, already checked against its checksum.
type Data struct {
	// Key identifies the content (its sha256): equal keys, equal data.
	Key string
	// Path is a local file holding the dump.
	Path string
	// Size in bytes.
	Size int64
}
