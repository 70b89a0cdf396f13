package postgres

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5"
)

// Verify checks, as the app role, that every requested extension
// exists in the app database, explaining any the init script skipped, and
// returns the allowed extensions the image provides with their default
// versions.
func Verify(ctx context.Context, conn *pgx.Conn, ref, db string, feats, allowed []string) (map[string]string, error) {
	var offered, offeredVersions, installed []string
	err := conn.QueryRow(ctx, `SELECT
		ARRAY(SELECT name::text FROM pg_available_extensions ORDER BY name),
		ARRAY(SELECT coalesce(default_version, '') FROM pg_available_extensions ORDER BY name),
		ARRAY(SELECT extname::text FROM pg_extension)`).Scan(&offered, &offeredVersions, &installed)
	if err != nil {
		return nil, fmt.Errorf("list available and installed extensions: %w", err)
	}
	available := intersect(allowed, offered)
	versions := make(map[string]string, len(available))
	for i, name := range offered {
		if slices.Contains(available, name) && i < len(offeredVersions) {
			versions[name] = offeredVersions[i]
		}
	}
	for _, f := range feats {
		if !slices.Contains(offered, f) {
			return nil, fmt.Errorf("postgres image %q does not provide extension %q (available allowed extensions: %s)",
				ref, f, strings.Join(available, ", "))
		}
	}
	for _, f := range feats {
		if slices.Contains(installed, f) {
			continue
		}
		requires, err := extensionRequires(ctx, conn)
		if err != nil {
			return nil, err
		}
		if dep, ok := disallowedDependency(f, requires, allowed, installed); ok {
			return nil, fmt.Errorf("extension %q requires %q, which is not on the allowlist", f, dep)
		}
		return nil, fmt.Errorf("extension %q was not created in database %q", f, db)
	}
	return versions, nil
}

// extensionRequires maps each available extension to what its default
// version requires.
func extensionRequires(ctx context.Context, conn *pgx.Conn) (map[string][]string, error) {
	rows, err := conn.Query(ctx, `SELECT e.name, coalesce(v.requires, '{}')::text[]
		FROM pg_available_extensions e
		JOIN pg_available_extension_versions v ON v.name = e.name AND v.version = e.default_version`)
	if err != nil {
		return nil, fmt.Errorf("list extension dependencies: %w", err)
	}
	out := map[string][]string{}
	var name string
	var reqs []string
	_, err = pgx.ForEachRow(rows, []any{&name, &reqs}, func() error {
		out[name] = slices.Clone(reqs)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list extension dependencies: %w", err)
	}
	return out, nil
}

// disallowedDependency walks what ext requires, transitively, and returns
// the first dependency that is neither allowed nor already installed.
func disallowedDependency(ext string, requires map[string][]string, allowed, installed []string) (string, bool) {
	seen := map[string]bool{}
	stack := slices.Clone(requires[ext])
	for len(stack) > 0 {
		dep := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[dep] || slices.Contains(installed, dep) {
			continue
		}
		seen[dep] = true
		if !slices.Contains(allowed, dep) {
			return dep, true
		}
		stack = append(stack, requires[dep]...)
	}
	return "", false
}

// intersect returns the sorted elements of a that are in b.
func intersect(a, b []string) []string {
	out := []string{}
	for _, x := range a {
		if slices.Contains(b, x) && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	slices.Sort(out)
	return out
}
