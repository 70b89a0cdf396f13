#!/usr/bin/env bash
# Runs pgvector-go's own test suite, unchanged, against a sandbox:
#
#   bash scripts/pgvectorsuite/run.sh [VERSION]     (default v0.3.0)
#
# It applies main.sbx.hcl (database pgvector_go_test, postgres[vector]),
# maps the sandbox's variables to libpq's (which pgx, lib/pq, gorm, sqlx
# and ent read), copies the module out of the module cache and runs
# `go test` in it as its own CI does (tidy, generate, test), then
# destroys the sandbox. Prints go test's summary and the pass count.
set -euo pipefail
# This machine is shared and often loaded: give PostgreSQL time to start.
export SANDBOXER_READY_TIMEOUT=${SANDBOXER_READY_TIMEOUT:-5m}
version=${1:-v0.3.0}
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
bin="$root/bin/sandboxer"
work=$(mktemp -d)
state="$work/state.db"
trap '"$bin" --chdir "$here" --state "$state" destroy --auto-approve >/dev/null || true; chmod -R u+w "$work"; rm -rf "$work"' EXIT

(cd "$root" && go build -o "$bin" ./cmd/sandboxer)
"$bin" --chdir "$here" --state "$state" apply --auto-approve >/dev/null
eval "$("$bin" --chdir "$here" --state "$state" env sandbox.suite)"

dir=$(cd "$root" && go mod download -json "github.com/pgvector/pgvector-go@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
cp -r "$dir" "$work/pgvector-go"
chmod -R u+w "$work/pgvector-go"
cd "$work/pgvector-go"
export PGHOST=$SUITE_POSTGRES_HOST PGPORT=$SUITE_POSTGRES_PORT PGUSER=$SUITE_POSTGRES_USER \
       PGPASSWORD=$SUITE_POSTGRES_PASSWORD PGDATABASE=$SUITE_POSTGRES_DB PGSSLMODE=disable
# go-pg and bun take the user from $USER and do not read PGHOST/PGPORT.
export USER=$SUITE_POSTGRES_USER
# The module's own CI steps: tidy, generate the ent client its ent test
# uses, tidy again, then go test.
go mod tidy >/dev/null
go generate ./test/ent >/dev/null
go mod tidy >/dev/null
set +e
# PGVECTOR_SKIP (a go test -skip pattern) leaves out tests that cannot be
# pointed at a server: bun's and go-pg's take no password from the
# environment, and bun's panics, ending the run.
go test -count=1 -v ${PGVECTOR_SKIP:+-skip "$PGVECTOR_SKIP"} . 2>&1 | tee "$work/out.txt" | grep -E '^(--- |ok|FAIL|PASS|panic)'
set -e
pass=$(grep -c '^--- PASS' "$work/out.txt" || true)
fail=$(grep -c '^--- FAIL' "$work/out.txt" || true)
echo "pgvector-go $version against sandbox.suite: $pass passed, $fail failed"
