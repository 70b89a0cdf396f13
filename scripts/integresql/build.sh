#!/usr/bin/env bash
# Builds IntegreSQL's server (github.com/allaboutapps/integresql v1.1.0)
# from the Go module proxy into bin/integresql (git-ignored), for the
# third side of the database-per-test benchmarks (`make bench`:
# BenchmarkDatabasePerTest and BenchmarkDatabaseThroughput run it over
# its HTTP API against the same PostgreSQL). Skipped when it is there.
#
# A small module of its own: `go install …@v1.1.0` fails here (it asks
# the proxy for the module's version list, which answers 403), while a
# module that requires the exact version builds. Its dependencies (echo,
# lib/pq) stay out of sandboxer's go.mod.
#
#   scripts/integresql/build.sh          (make integresql)
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="/usr/local/go/bin:$PATH"

VERSION=v1.1.0
out=bin/integresql
[ -x "$out" ] && exit 0
src="$(mktemp -d)"
trap 'rm -rf "$src"' EXIT
mkdir -p bin
printf 'module sandboxer.local/integresqlbuild\n\ngo 1.24\n' > "$src/go.mod"
(cd "$src" && go get "github.com/allaboutapps/integresql/cmd/server@$VERSION" >/dev/null 2>&1 \
	&& go build -trimpath -o integresql github.com/allaboutapps/integresql/cmd/server)
mv "$src/integresql" "$out"
echo "built $out (IntegreSQL $VERSION)"
