#!/bin/bash
# A small equivalent of the official mariadb image's entrypoint: on an empty
# /var/lib/mysql it initialises the system tables, starts a temporary server
# on the socket only, sets the root password, the database and the user the
# environment asks for, runs /docker-entrypoint-initdb.d/*, stops the
# temporary server and then starts the real one. Everything is read from the
# same variables as the official image (MARIADB_* first, MYSQL_* second),
# each also as *_FILE.
set -eo pipefail
shopt -s nullglob

log() { printf '%s [Note] [Entrypoint]: %s\n' "$(date --rfc-3339=seconds)" "$*"; }
error() { printf '%s [ERROR] [Entrypoint]: %s\n' "$(date --rfc-3339=seconds)" "$*" >&2; exit 1; }

# file_env VAR [DEFAULT]: VAR from VAR or VAR_FILE (not both), MARIADB_* else MYSQL_*.
file_env() {
	local var=$1 def=${2:-} mysqlvar=${1/MARIADB/MYSQL}
	local fvar=${var}_FILE mysqlfvar=${mysqlvar}_FILE val=$def
	if [ -n "${!var:-}" ] && [ -n "${!fvar:-}" ]; then
		error "both $var and $fvar are set (but are exclusive)"
	fi
	if [ "$var" != "$mysqlvar" ] && [ -n "${!mysqlvar:-}" ] && [ -n "${!mysqlfvar:-}" ]; then
		error "both $mysqlvar and $mysqlfvar are set (but are exclusive)"
	fi
	if [ -n "${!var:-}" ]; then
		val=${!var}
	elif [ -n "${!fvar:-}" ]; then
		val=$(<"${!fvar}")
	elif [ "$var" != "$mysqlvar" ] && [ -n "${!mysqlvar:-}" ]; then
		val=${!mysqlvar}
	elif [ "$var" != "$mysqlvar" ] && [ -n "${!mysqlfvar:-}" ]; then
		val=$(<"${!mysqlfvar}")
	fi
	export "$var"="$val"
	unset "$fvar" "$mysqlvar" "$mysqlfvar"
}

# The server's own idea of its settings, with the command line's arguments;
# a setting the server refuses (e.g. a missing secure_file_priv directory)
# stops here with the server's message.
setup_env() {
	local help
	if ! help=$("$@" --verbose --help 2>&1); then
		error "$1 failed while checking its configuration: $(grep -E '\[(ERROR|Warning)\]|ERROR' <<<"$help" | head -n 5)"
	fi
	DATADIR=$(awk '$1 == "datadir" { print $2; exit }' <<<"$help"); DATADIR=${DATADIR:-/var/lib/mysql}
	SOCKET=$(awk '$1 == "socket" { print $2; exit }' <<<"$help"); SOCKET=${SOCKET:-/run/mysqld/mysqld.sock}
	file_env MARIADB_ROOT_HOST '%'
	file_env MARIADB_DATABASE
	file_env MARIADB_USER
	file_env MARIADB_PASSWORD
	file_env MARIADB_ROOT_PASSWORD
	file_env MARIADB_PASSWORD_HASH
	file_env MARIADB_ROOT_PASSWORD_HASH
	file_env MARIADB_ALLOW_EMPTY_ROOT_PASSWORD
	file_env MARIADB_RANDOM_ROOT_PASSWORD
	file_env MARIADB_INITDB_SKIP_TZINFO
	# like the official image, MYSQL_ALLOW_EMPTY_PASSWORD is the older spelling
	: "${MARIADB_ALLOW_EMPTY_ROOT_PASSWORD:=${MYSQL_ALLOW_EMPTY_PASSWORD:-}}"
	DATABASE_ALREADY_EXISTS=
	[ -d "$DATADIR/mysql" ] && DATABASE_ALREADY_EXISTS=true
	return 0
}

verify_env() {
	if [ -z "$MARIADB_ROOT_PASSWORD" ] && [ -z "$MARIADB_ROOT_PASSWORD_HASH" ] &&
		[ -z "$MARIADB_ALLOW_EMPTY_ROOT_PASSWORD" ] && [ -z "$MARIADB_RANDOM_ROOT_PASSWORD" ]; then
		error "Database is uninitialized and password option is not specified
	You need to specify one of MARIADB_ROOT_PASSWORD, MARIADB_ROOT_PASSWORD_HASH, MARIADB_ALLOW_EMPTY_ROOT_PASSWORD and MARIADB_RANDOM_ROOT_PASSWORD"
	fi
	if [ -n "$MARIADB_USER" ] && [ "$MARIADB_USER" = root ]; then
		error "MARIADB_USER=root: the root account is set up by MARIADB_ROOT_PASSWORD*"
	fi
	if [ -n "$MARIADB_PASSWORD" ] && [ -n "$MARIADB_PASSWORD_HASH" ]; then
		error "MARIADB_PASSWORD and MARIADB_PASSWORD_HASH are exclusive"
	fi
}

# The client as root over the socket; the password goes in a defaults file on
# a pipe, never on the command line.
exec_client() {
	local pw=${ROOT_PASSWORD_SET:-}
	mariadb --defaults-extra-file=<(printf '[client]\npassword="%s"\n' "${pw//\"/\\\"}") \
		--protocol=socket -uroot -hlocalhost --socket="$SOCKET" "$@"
}
process_sql() {
	if [ -n "$MARIADB_DATABASE" ]; then
		exec_client --database="$MARIADB_DATABASE" "$@"
	else
		exec_client "$@"
	fi
}
sql_escape() { sed -e "s/\\\\/\\\\\\\\/g" -e "s/'/\\\\'/g" <<<"$1"; }

temp_server_start() {
	"$@" --skip-networking --default-time-zone=SYSTEM --socket="$SOCKET" --wsrep_on=OFF \
		--expire-logs-days=0 --skip-slave-start --loose-innodb_buffer_pool_load_at_startup=0 \
		--skip-ssl --ssl-cert='' --ssl-key='' --ssl-ca='' &
	MARIADB_PID=$!
	local i
	for i in $(seq 300); do
		if exec_client --database=mysql -e 'SELECT 1' >/dev/null 2>&1; then return 0; fi
		kill -0 "$MARIADB_PID" 2>/dev/null || error "the temporary server exited while starting"
		sleep 0.1
	done
	error "the temporary server did not start in 30 s"
}

temp_server_stop() {
	kill "$MARIADB_PID"
	wait "$MARIADB_PID" || true
}

init_database_dir() {
	log "Initializing database files"
	mariadb-install-db --datadir="$DATADIR" --rpm --auth-root-authentication-method=normal \
		--skip-test-db --default-time-zone=SYSTEM --enforce-storage-engine= --skip-log-bin \
		--expire-logs-days=0 --loose-innodb_buffer_pool_load_at_startup=0 \
		--loose-innodb_buffer_pool_dump_at_shutdown=0 "${@:2}" >/dev/null
	log "Database files initialized"
}

setup_db() {
	if [ -z "$MARIADB_INITDB_SKIP_TZINFO" ]; then
		mariadb-tzinfo-to-sql --skip-write-binlog /usr/share/zoneinfo 2>/dev/null | exec_client --database=mysql
	fi
	if [ -n "$MARIADB_RANDOM_ROOT_PASSWORD" ]; then
		MARIADB_ROOT_PASSWORD=$(head -c 24 /dev/urandom | base64)
		log "GENERATED ROOT PASSWORD: $MARIADB_ROOT_PASSWORD"
	fi
	local rootpw
	if [ -n "$MARIADB_ROOT_PASSWORD_HASH" ]; then
		rootpw="PASSWORD '$(sql_escape "$MARIADB_ROOT_PASSWORD_HASH")'"
	else
		rootpw="'$(sql_escape "$MARIADB_ROOT_PASSWORD")'"
	fi
	local rootCreate=
	if [ -n "$MARIADB_ROOT_HOST" ] && [ "$MARIADB_ROOT_HOST" != localhost ]; then
		local host
		host=$(sql_escape "$MARIADB_ROOT_HOST")
		rootCreate="CREATE USER 'root'@'$host' IDENTIFIED BY $rootpw;
			GRANT ALL ON *.* TO 'root'@'$host' WITH GRANT OPTION;
			GRANT PROXY ON ''@'%' TO 'root'@'$host' WITH GRANT OPTION;"
	fi
	# With only a hash, root@localhost keeps no password until the init files
	# have run (the official image does the same), so they can run as root.
	local rootLocalhost=
	if [ -z "$MARIADB_ROOT_PASSWORD_HASH" ]; then
		rootLocalhost="SET PASSWORD FOR 'root'@'localhost' = PASSWORD('$(sql_escape "$MARIADB_ROOT_PASSWORD")');"
	fi
	local createDb= createUser= grantUser=
	if [ -n "$MARIADB_DATABASE" ]; then
		createDb="CREATE DATABASE IF NOT EXISTS \`${MARIADB_DATABASE//\`/\`\`}\`;"
	fi
	if [ -n "$MARIADB_USER" ] && { [ -n "$MARIADB_PASSWORD" ] || [ -n "$MARIADB_PASSWORD_HASH" ]; }; then
		local user userpw
		user=$(sql_escape "$MARIADB_USER")
		if [ -n "$MARIADB_PASSWORD_HASH" ]; then
			userpw="PASSWORD '$(sql_escape "$MARIADB_PASSWORD_HASH")'"
		else
			userpw="'$(sql_escape "$MARIADB_PASSWORD")'"
		fi
		createUser="CREATE USER '$user'@'%' IDENTIFIED BY $userpw;"
		if [ -n "$MARIADB_DATABASE" ]; then
			grantUser="GRANT ALL ON \`${MARIADB_DATABASE//\`/\`\`}\`.* TO '$user'@'%';"
		fi
	fi
	log "Securing system users and creating the database and user asked for"
	exec_client --database=mysql --binary-mode <<-EOSQL
		SET @@SESSION.SQL_LOG_BIN=0;
		SET @@SESSION.SQL_MODE=REPLACE(@@SESSION.SQL_MODE, 'NO_BACKSLASH_ESCAPES', '');
		DROP USER IF EXISTS root@'127.0.0.1', root@'::1';
		EXECUTE IMMEDIATE CONCAT('DROP USER IF EXISTS root@\'', @@hostname,'\'');
		$rootLocalhost
		$rootCreate
		$createDb
		$createUser
		$grantUser
	EOSQL
	# From here on the root client needs the password.
	ROOT_PASSWORD_SET=$MARIADB_ROOT_PASSWORD
}

set_root_password_hash() {
	[ -n "$MARIADB_ROOT_PASSWORD_HASH" ] || return 0
	log "Setting root@localhost password hash"
	exec_client --binary-mode <<-EOSQL
		SET @@SESSION.SQL_LOG_BIN=0;
		SET PASSWORD FOR 'root'@'localhost' = '$(sql_escape "$MARIADB_ROOT_PASSWORD_HASH")';
	EOSQL
}

process_init_files() {
	local f
	for f in "$@"; do
		case "$f" in
			*.sh)
				if [ -x "$f" ]; then log "$0: running $f"; "$f"
				else log "$0: sourcing $f"; . "$f"; fi ;;
			*.sql) log "$0: running $f"; process_sql <"$f" ;;
			*.sql.gz) log "$0: running $f"; gunzip -c "$f" | process_sql ;;
			*.sql.xz) log "$0: running $f"; xzcat "$f" | process_sql ;;
			*.sql.zst) log "$0: running $f"; zstd -dc "$f" | process_sql ;;
			*) log "$0: ignoring $f" ;;
		esac
	done
}

_main() {
	# first arg is `-f` or `--some-option`: run mariadbd with it
	if [ "${1:0:1}" = '-' ]; then
		set -- mariadbd "$@"
	fi
	if [ "$1" = mariadbd ] || [ "$1" = mysqld ]; then
		setup_env "$@"
		# allow the container to be started with `--user`; otherwise drop root
		if [ "$(id -u)" = 0 ]; then
			find "$DATADIR" \! -user mysql -exec chown mysql: '{}' +
			exec setpriv --reuid=mysql --regid=mysql --init-groups "${BASH_SOURCE[0]}" "$@"
		fi
		if [ -z "$DATABASE_ALREADY_EXISTS" ]; then
			verify_env
			init_database_dir "$@"
			log "Starting temporary server"
			temp_server_start "$@"
			setup_db
			process_init_files /docker-entrypoint-initdb.d/*
			set_root_password_hash
			log "Stopping temporary server"
			temp_server_stop
			log "MariaDB init process done. Ready for start up."
		fi
	fi
	exec "$@"
}

_main "$@"
