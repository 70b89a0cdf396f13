#!/usr/bin/env bash
# Build the local sandbox images from Debian packages; no container registry needed.
#
#   images/build.sh                   build whatever is missing (postgres, redis, mysql, valkey)
#   images/build.sh postgres          build just one image (postgres | redis | mysql | valkey)
#   FORCE=1 images/build.sh           rebuild even if the images already exist (or -f)
#   VERBOSE=1 images/build.sh         stream mmdebstrap / docker build output
#
# How it works, per image:
#   1. mmdebstrap makes a minimal Debian rootfs tarball with the packages installed
#   2. `docker import` turns it into a base image (sandboxer.local/base-*)
#   3. `docker build` adds the entrypoint, env, user and ports (images/<name>/Dockerfile)
#
# Must run as root on a Debian host with a Docker engine and working apt. The Debian
# mirror is read from the host's apt sources at build time (override: DEBIAN_MIRROR;
# DEBIAN_SECURITY_MIRROR likewise, set it empty to leave out the -security suite).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
FORCE=${FORCE:-0}
VERBOSE=${VERBOSE:-0}
export DOCKER_BUILDKIT=0 # classic builder: uses local-only base images, never pulls

PG_IMAGE=sandboxer.local/postgres:17
PG_BASE=sandboxer.local/base-postgres:trixie
REDIS_IMAGE=sandboxer.local/redis:7
REDIS_BASE=sandboxer.local/base-redis:bookworm
MYSQL_IMAGE=sandboxer.local/mysql:11.8
MYSQL_BASE=sandboxer.local/base-mysql:trixie
VALKEY_IMAGE=sandboxer.local/valkey:8
VALKEY_BASE=sandboxer.local/base-valkey:trixie

log() { printf '==> %s\n' "$*" >&2; }
die() { printf 'build.sh: error: %s\n' "$*" >&2; exit 1; }

# Keep images small: no docs, man pages or translations (copyright files stay).
SLIM=(
  --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --dpkgopt='path-exclude=/usr/share/man/*'
  --dpkgopt='path-exclude=/usr/share/info/*'
  --dpkgopt='path-exclude=/usr/share/lintian/*'
  --dpkgopt='path-exclude=/usr/share/locale/*'
  --dpkgopt='path-include=/usr/share/locale/locale.alias'
)

# Run a command quietly, showing its log tail only on failure (or everything if VERBOSE=1).
run() {
  local logf="$WORK/$1.log"; shift
  if [ "$VERBOSE" = 1 ]; then "$@"; return; fi
  if ! "$@" >"$logf" 2>&1; then
    tail -n 40 "$logf" >&2
    die "command failed: $1 (last lines of its output above)"
  fi
}

image_exists() { docker image inspect "$1" >/dev/null 2>&1; }

# Print the first URI of the apt source (deb822 *.sources or one-line *.list) whose
# suites contain exactly $1, e.g. "bookworm" -> main archive, "bookworm-security".
apt_source_uri() {
  local suite=$1 f uri
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -r "$f" ] || continue
    uri=$(awk -v want="$suite" '
      BEGIN { RS = ""; FS = "\n" }             # one deb822 stanza per record
      {
        types = ""; uris = ""; suites = ""; enabled = 1
        for (i = 1; i <= NF; i++) {
          line = $i
          if (line ~ /^[ \t]*#/) continue
          if (sub(/^Types:[ \t]*/, "", line)) types = line
          else if (sub(/^URIs:[ \t]*/, "", line)) uris = line
          else if (sub(/^Suites:[ \t]*/, "", line)) suites = line
          else if (line ~ /^Enabled:[ \t]*no/) enabled = 0
        }
        if (!enabled || types !~ /(^|[ \t])deb([ \t]|$)/) next
        n = split(suites, s, /[ \t]+/)
        for (j = 1; j <= n; j++) if (s[j] == want) { split(uris, u, /[ \t]+/); print u[1]; exit }
      }' "$f")
    [ -n "$uri" ] && { echo "${uri%/}"; return 0; }
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -r "$f" ] || continue
    uri=$(awk -v want="$suite" '
      $1 == "deb" {
        i = 2
        if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }   # skip [options]
        if ($(i + 1) == want) { print $i; exit }
      }' "$f")
    [ -n "$uri" ] && { echo "${uri%/}"; return 0; }
  done
  return 1
}

# Set SOURCES to the mmdebstrap source lines for suite $1 (e.g. trixie): main archive
# and -updates, plus -security if the host has a security source configured.
apt_sources_for() {
  local suite=$1
  SOURCES=("deb $MIRROR $suite main" "deb $MIRROR $suite-updates main")
  [ -z "$SECURITY_MIRROR" ] || SOURCES+=("deb $SECURITY_MIRROR $suite-security main")
}

# mmdebstrap wrapper: $1 = suite, $2 = output tarball, rest = extra options.
debootstrap_tar() {
  local suite=$1 out=$2; shift 2
  apt_sources_for "$suite"
  # maybe-merged-usr: set up merged /usr with symlinks instead of installing the
  # usrmerge package (which would drag perl into the redis image).
  run "mmdebstrap-$suite" mmdebstrap --mode=root --variant=apt --format=tar \
    --hook-dir=/usr/share/mmdebstrap/hooks/maybe-merged-usr \
    "${SLIM[@]}" "$@" "$suite" "$out" "${SOURCES[@]}"
}

# Shell snippet (for an mmdebstrap hook) adding a system user+group with a fixed id,
# so files match the official images (postgres and redis both use 999). The package
# postinst later finds the existing user and leaves it alone.
add_user_hook() { # name uid home shell
  printf 'echo "%s:x:%s:%s::%s:%s" >>"$1/etc/passwd"; echo "%s:x:%s:" >>"$1/etc/group"' \
    "$1" "$2" "$2" "$3" "$4" "$1" "$2"
}

build_base_postgres() {
  local tar="$WORK/postgres-rootfs.tar"
  debootstrap_tar trixie "$tar" \
    --include=postgresql-17,postgresql-17-pgvector,postgresql-17-postgis-3,postgresql-17-timescaledb,locales \
    --setup-hook='mkdir -p "$1/etc/postgresql-common/createcluster.d"' \
    --setup-hook='echo "create_main_cluster = false" >"$1/etc/postgresql-common/createcluster.d/no-main-cluster.conf"' \
    --essential-hook="$(add_user_hook postgres 999 /var/lib/postgresql /bin/bash)" \
    --customize-hook='chroot "$1" localedef -i en_US -c -f UTF-8 -A /usr/share/locale/locale.alias en_US.UTF-8' \
    --customize-hook='rm -f "$1"/etc/ssl/private/ssl-cert-snakeoil.key "$1"/etc/ssl/certs/ssl-cert-snakeoil.pem'
  run import-postgres docker import -m "images/build.sh: Debian trixie + PostgreSQL 17" "$tar" "$PG_BASE"
  rm -f "$tar"
}

build_base_redis() {
  local tar="$WORK/redis-rootfs.tar"
  debootstrap_tar bookworm "$tar" \
    --include=redis-server,redis-redisearch \
    --essential-hook="$(add_user_hook redis 999 /var/lib/redis /usr/sbin/nologin)"
  run import-redis docker import -m "images/build.sh: Debian bookworm + Redis 7" "$tar" "$REDIS_BASE"
  rm -f "$tar"
}

# MariaDB 11.8 (trixie; the LTS the official mariadb:lts has too). The package's
# postinst initialises /var/lib/mysql; the image ships it empty, as the official
# one does, so the entrypoint's first start initialises it with the caller's
# passwords. The mysql user has the official images' uid/gid 999.
build_base_mysql() {
  local tar="$WORK/mysql-rootfs.tar"
  debootstrap_tar trixie "$tar" \
    --include=mariadb-server,mariadb-client,tzdata \
    --essential-hook="$(add_user_hook mysql 999 /nonexistent /bin/false)" \
    --customize-hook='rm -rf "$1"/var/lib/mysql/* "$1"/etc/ssl/private/ssl-cert-snakeoil.key "$1"/etc/ssl/certs/ssl-cert-snakeoil.pem'
  run import-mysql docker import -m "images/build.sh: Debian trixie + MariaDB 11.8" "$tar" "$MYSQL_BASE"
  rm -f "$tar"
}

# Valkey 8.1 (trixie). Debian packages no Valkey module (no valkey-search,
# -json or -bloom in trixie), so the image has none.
build_base_valkey() {
  local tar="$WORK/valkey-rootfs.tar"
  debootstrap_tar trixie "$tar" \
    --include=valkey-server \
    --essential-hook="$(add_user_hook valkey 999 /var/lib/valkey /usr/sbin/nologin)"
  run import-valkey docker import -m "images/build.sh: Debian trixie + Valkey 8" "$tar" "$VALKEY_BASE"
  rm -f "$tar"
}

# build_image <name> <final tag> <base tag>
build_image() {
  local name=$1 image=$2 base=$3 t0=$SECONDS old=() id
  for id in "$image" "$base"; do # remembered so a rebuild can drop the replaced images
    old+=("$(docker image inspect -f '{{.Id}}' "$id" 2>/dev/null || true)")
  done
  if [ "$FORCE" = 1 ] || ! image_exists "$base"; then
    log "$name: building Debian rootfs -> $base"
    "build_base_$name"
  else
    log "$name: reusing existing $base"
  fi
  log "$name: docker build -> $image"
  run "build-$name" docker build --build-arg "BASE=$base" -t "$image" "$HERE/$name"
  for id in "${old[@]}"; do # remove replaced images once nothing is tagged with them
    if [ -n "$id" ] && [ "$(docker image inspect -f '{{len .RepoTags}}' "$id" 2>/dev/null)" = 0 ]; then
      docker rmi "$id" >/dev/null 2>&1 || true
    fi
  done
  log "$name: done in $((SECONDS - t0))s ($(docker image inspect -f '{{.Size}}' "$image" | awk '{printf "%.0f MB", $1/1e6}'))"
}

# Set TODO to the targets among $@ whose image is missing (all of them with FORCE=1).
pending() {
  local t image
  TODO=()
  for t in "$@"; do
    case $t in
      postgres) image=$PG_IMAGE ;;
      redis) image=$REDIS_IMAGE ;;
      mysql) image=$MYSQL_IMAGE ;;
      valkey) image=$VALKEY_IMAGE ;;
    esac
    if [ "$FORCE" = 1 ] || ! image_exists "$image"; then
      TODO+=("$t")
    else
      log "$image already exists, skipping (FORCE=1 to rebuild)"
    fi
  done
}

main() {
  local targets=() t
  for t in "$@"; do
    case $t in
      -f|--force) FORCE=1 ;;
      -v|--verbose) VERBOSE=1 ;;
      postgres|redis|mysql|valkey) targets+=("$t") ;;
      -h|--help) sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
      *) die "unknown argument: $t (want: postgres, redis, mysql, valkey, -f)" ;;
    esac
  done
  [ ${#targets[@]} -gt 0 ] || targets=(postgres redis mysql valkey)

  command -v docker >/dev/null || die "docker CLI not found"
  docker info >/dev/null 2>&1 || die "docker engine not reachable"

  # Skip images that already exist; with nothing to do, need neither root nor apt.
  pending "${targets[@]}"
  [ ${#TODO[@]} -gt 0 ] || { log "nothing to build"; return 0; }

  [ "$(id -u)" = 0 ] || die "must run as root (mmdebstrap --mode=root)"
  # One build at a time: a concurrent run waits here, then re-checks what is missing.
  mkdir -p /run/lock
  exec 9>/run/lock/sandboxer-images.lock
  if ! flock -n 9; then
    log "another build.sh is running, waiting for it"
    flock 9
    pending "${targets[@]}"
    [ ${#TODO[@]} -gt 0 ] || { log "nothing left to build"; return 0; }
  fi

  WORK=$(mktemp -d /var/tmp/sandboxer-images.XXXXXX)
  trap 'rm -rf "$WORK"' EXIT

  if ! command -v mmdebstrap >/dev/null; then
    log "installing mmdebstrap"
    run apt-update apt-get update
    run apt-install env DEBIAN_FRONTEND=noninteractive apt-get install -y mmdebstrap
  fi

  MIRROR=${DEBIAN_MIRROR:-$(apt_source_uri bookworm || true)}
  [ -n "$MIRROR" ] || die "no apt source with suite 'bookworm' in /etc/apt; set DEBIAN_MIRROR"
  SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR-$(apt_source_uri bookworm-security || true)}
  log "debian mirror: $MIRROR${SECURITY_MIRROR:+ (security: $SECURITY_MIRROR)}"

  local t0=$SECONDS
  for t in "${TODO[@]}"; do
    case $t in
      postgres) build_image postgres "$PG_IMAGE" "$PG_BASE" ;;
      redis) build_image redis "$REDIS_IMAGE" "$REDIS_BASE" ;;
      mysql) build_image mysql "$MYSQL_IMAGE" "$MYSQL_BASE" ;;
      valkey) build_image valkey "$VALKEY_IMAGE" "$VALKEY_BASE" ;;
    esac
  done
  log "all done in $((SECONDS - t0))s"
}

main "$@"
