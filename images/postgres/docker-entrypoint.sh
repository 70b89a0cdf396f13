#!/usr/bin/env bash
# Minimal equivalent of the official postgres image's docker-entrypoint.sh.
#
# Env: POSTGRES_PASSWORD (required unless POSTGRES_HOST_AUTH_METHOD=trust),
#      POSTGRES_USER (postgres), POSTGRES_DB ($POSTGRES_USER), PGDATA,
#      POSTGRES_INITDB_ARGS, POSTGRES_INITDB_WALDIR, POSTGRES_HOST_AUTH_METHOD,
#      and *_FILE variants of POSTGRES_PASSWORD/USER/DB/INITDB_ARGS.
set -Eeo pipefail

# file_env VAR [DEFAULT]: VAR or the contents of the file named by VAR_FILE.
file_env() {
	local var="$1" fileVar="${1}_FILE" def="${2:-}"
	if [ "${!var:-}" ] && [ "${!fileVar:-}" ]; then
		echo >&2 "error: both $var and $fileVar are set (but are exclusive)"
		exit 1
	fi
	local val="$def"
	if [ "${!var:-}" ]; then
		val="${!var}"
	elif [ "${!fileVar:-}" ]; then
		val="$(< "${!fileVar}")"
	fi
	export "$var"="$val"
	unset "$fileVar"
}

# true if the server args only ask for help/version/config output
_pg_want_help() {
	local arg
	for arg; do
		case "$arg" in
			-'?' | --help | --describe-config | -V | --version) return 0 ;;
		esac
	done
	return 1
}

docker_setup_env() {
	file_env 'POSTGRES_PASSWORD'
	file_env 'POSTGRES_USER' 'postgres'
	file_env 'POSTGRES_DB' "$POSTGRES_USER"
	file_env 'POSTGRES_INITDB_ARGS'
	: "${POSTGRES_HOST_AUTH_METHOD:=}"
	DATABASE_ALREADY_EXISTS=
	if [ -s "$PGDATA/PG_VERSION" ]; then
		DATABASE_ALREADY_EXISTS='true'
	fi
}

docker_create_db_directories() {
	local user
	user="$(id -u)"
	mkdir -p "$PGDATA"
	chmod 00700 "$PGDATA" || :
	mkdir -p /var/run/postgresql || :
	chmod 03775 /var/run/postgresql || :
	if [ -n "${POSTGRES_INITDB_WALDIR:-}" ]; then
		mkdir -p "$POSTGRES_INITDB_WALDIR"
		if [ "$user" = '0' ]; then
			find "$POSTGRES_INITDB_WALDIR" \! -user postgres -exec chown postgres '{}' +
		fi
		chmod 700 "$POSTGRES_INITDB_WALDIR"
	fi
	if [ "$user" = '0' ]; then
		find "$PGDATA" \! -user postgres -exec chown postgres '{}' +
		find /var/run/postgresql \! -user postgres -exec chown postgres '{}' +
	fi
}

docker_verify_minimum_env() {
	if [ -z "$POSTGRES_PASSWORD" ] && [ 'trust' != "$POSTGRES_HOST_AUTH_METHOD" ]; then
		cat >&2 <<-'EOE'
			Error: Database is uninitialized and superuser password is not specified.
			       You must specify POSTGRES_PASSWORD to a non-empty value for the
			       superuser. For example, "-e POSTGRES_PASSWORD=password" on "docker run".

			       You may also use "POSTGRES_HOST_AUTH_METHOD=trust" to allow all
			       connections without a password. This is *not* recommended.
		EOE
		exit 1
	fi
	if [ 'trust' = "$POSTGRES_HOST_AUTH_METHOD" ]; then
		echo >&2 'WARNING: POSTGRES_HOST_AUTH_METHOD=trust: all host connections are accepted without a password.'
	fi
}

docker_init_database_dir() {
	if [ -n "${POSTGRES_INITDB_WALDIR:-}" ]; then
		set -- --waldir "$POSTGRES_INITDB_WALDIR" "$@"
	fi
	# POSTGRES_INITDB_ARGS is word-split on purpose (e.g. "--nosync --data-checksums").
	# shellcheck disable=SC2086
	eval 'initdb --username="$POSTGRES_USER" --pwfile=<(printf "%s\n" "$POSTGRES_PASSWORD") '"$POSTGRES_INITDB_ARGS"' "$@"'
}

# Host (TCP) connections: scram-sha-256 (the server's password_encryption) or the
# method chosen with POSTGRES_HOST_AUTH_METHOD. Local socket stays "trust" (initdb default).
# Args: the server options (without the leading "postgres").
pg_setup_hba_conf() {
	if [ -z "$POSTGRES_HOST_AUTH_METHOD" ]; then
		POSTGRES_HOST_AUTH_METHOD="$(postgres -C password_encryption "$@")"
	fi
	printf '\nhost all all all %s\n' "$POSTGRES_HOST_AUTH_METHOD" >> "$PGDATA/pg_hba.conf"
}

# Temporary server for init scripts: unix socket only, no TCP.
docker_temp_server_start() {
	set -- "$@" -c listen_addresses='' -p "${PGPORT:-5432}"
	PGUSER="${PGUSER:-$POSTGRES_USER}" \
		pg_ctl -D "$PGDATA" -o "$(printf '%q ' "$@")" -w start
}

docker_temp_server_stop() {
	PGUSER="${PGUSER:-postgres}" pg_ctl -D "$PGDATA" -m fast -w stop
}

# psql against the temporary server, stopping at the first error.
docker_process_sql() {
	local query_runner=(psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --no-password --no-psqlrc)
	if [ -n "$POSTGRES_DB" ]; then
		query_runner+=(--dbname "$POSTGRES_DB")
	fi
	PGHOST= PGHOSTADDR= "${query_runner[@]}" "$@"
}

docker_setup_db() {
	local dbAlreadyExists
	dbAlreadyExists="$(
		POSTGRES_DB= docker_process_sql --dbname postgres --set db="$POSTGRES_DB" --tuples-only <<-'EOSQL'
			SELECT 1 FROM pg_database WHERE datname = :'db' ;
		EOSQL
	)"
	if [ -z "$dbAlreadyExists" ]; then
		POSTGRES_DB= docker_process_sql --dbname postgres --set db="$POSTGRES_DB" <<-'EOSQL'
			CREATE DATABASE :"db" ;
		EOSQL
		echo
	fi
}

# Run /docker-entrypoint-initdb.d/* (optional): *.sh (executed if executable, else
# sourced), *.sql, *.sql.gz, *.sql.xz, *.sql.zst.
docker_process_init_files() {
	local f
	echo
	for f in /docker-entrypoint-initdb.d/*; do
		[ -e "$f" ] || continue
		case "$f" in
			*.sh)
				if [ -x "$f" ]; then
					echo "$0: running $f"
					"$f"
				else
					echo "$0: sourcing $f"
					# shellcheck disable=SC1090
					. "$f"
				fi
				;;
			*.sql)     echo "$0: running $f"; docker_process_sql -f "$f"; echo ;;
			*.sql.gz)  echo "$0: running $f"; gunzip -c "$f" | docker_process_sql; echo ;;
			*.sql.xz)  echo "$0: running $f"; xzcat "$f" | docker_process_sql; echo ;;
			*.sql.zst) echo "$0: running $f"; zstd -dc "$f" | docker_process_sql; echo ;;
			*)         echo "$0: ignoring $f" ;;
		esac
		echo
	done
}

_main() {
	# `docker run IMAGE -c fsync=off` == `docker run IMAGE postgres -c fsync=off`
	if [ "${1:0:1}" = '-' ]; then
		set -- postgres "$@"
	fi

	if [ "$1" = 'postgres' ] && ! _pg_want_help "$@"; then
		docker_setup_env
		docker_create_db_directories
		if [ "$(id -u)" = '0' ]; then
			# restart this script as the postgres user
			exec setpriv --reuid=postgres --regid=postgres --init-groups "$BASH_SOURCE" "$@"
		fi

		if [ -z "$DATABASE_ALREADY_EXISTS" ]; then
			docker_verify_minimum_env
			ls /docker-entrypoint-initdb.d/ > /dev/null # fail early if unreadable

			docker_init_database_dir
			pg_setup_hba_conf "${@:2}"

			# PGPASSWORD for the init scripts' psql, in case local auth is not trust
			export PGPASSWORD="${PGPASSWORD:-$POSTGRES_PASSWORD}"
			docker_temp_server_start "${@:2}"
			docker_setup_db
			docker_process_init_files
			docker_temp_server_stop
			unset PGPASSWORD

			echo
			echo 'PostgreSQL init process complete; ready for start up.'
			echo
		else
			echo
			echo 'PostgreSQL Database directory appears to contain a database; Skipping initialization'
			echo
		fi
	fi

	exec "$@"
}

_main "$@"
