#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server for the state backend tests and
# prints its connection URL on stdout (the only line on stdout).
#
#   export SANDBOXER_TEST_PG_URL="$(scripts/pgserver.sh start DIR)"
#   scripts/pgserver.sh stop DIR
#
# It uses Debian's server binaries, installing the postgresql package
# through apt when they are missing (a fresh CI machine). The cluster
# lives in DIR (created; a temp dir is fine), is owned by an unprivileged
# user (initdb refuses root), listens on 127.0.0.1 only, on a free port,
# and trusts no one: the URL carries a random password.
set -euo pipefail

cmd="${1:-}"
dir="${2:-}"
if [[ -z "$cmd" || -z "$dir" ]]; then
  echo "usage: $0 start|stop DIR" >&2
  exit 2
fi

bindir() {
  local d
  for d in /usr/lib/postgresql/*/bin; do
    if [[ -x "$d/initdb" && -x "$d/postgres" && -x "$d/pg_ctl" ]]; then
      echo "$d"
      return 0
    fi
  done
  return 1
}

if [[ "$cmd" == stop ]]; then
  bin="$(bindir)"
  if [[ -f "$dir/data/postmaster.pid" ]]; then
    runas="$(stat -c %U "$dir/data")"
    if [[ "$(id -u)" == 0 ]]; then
      runuser -u "$runas" -- "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >&2
    else
      "$bin/pg_ctl" -D "$dir/data" -m fast -w stop >&2
    fi
  fi
  exit 0
fi
[[ "$cmd" == start ]] || { echo "unknown command $cmd" >&2; exit 2; }

if ! bin="$(bindir)"; then
  echo "installing the postgresql server package" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
  bin="$(bindir)"
fi

mkdir -p "$dir"
runas="$(id -un)"
if [[ "$(id -u)" == 0 ]]; then
  runas=postgres
  id "$runas" >/dev/null 2>&1 || useradd --system --no-create-home "$runas"
  chown "$runas" "$dir"
fi
run() {
  if [[ "$(id -u)" == 0 ]]; then
    runuser -u "$runas" -- "$@"
  else
    "$@"
  fi
}

password="$(head -c 18 /dev/urandom | base64 | tr '+/' '-_')"
pwfile="$dir/pwfile"
printf '%s\n' "$password" >"$pwfile"
chmod 600 "$pwfile"
[[ "$(id -u)" == 0 ]] && chown "$runas" "$pwfile"
run "$bin/initdb" -D "$dir/data" -U sandboxer --pwfile="$pwfile" \
  --auth=scram-sha-256 -E UTF8 --locale=C.UTF-8 >"$dir/initdb.log" 2>&1 ||
  { cat "$dir/initdb.log" >&2; exit 1; }
rm -f "$pwfile"

# A free loopback port: ask the kernel for one.
port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' 2>/dev/null ||
  echo $((20000 + RANDOM % 20000)))"
run "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -c port=$port -c unix_socket_directories=$dir -c max_connections=200 -c fsync=off" \
  start >&2 || { cat "$dir/server.log" >&2; exit 1; }

echo "postgres://sandboxer:${password}@127.0.0.1:${port}/postgres?sslmode=disable"
