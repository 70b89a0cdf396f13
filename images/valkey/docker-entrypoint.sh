#!/bin/sh
# Minimal equivalent of the official valkey/valkey image entrypoint.
set -e

# first arg is `-f` or `--some-option`, or a config file: run valkey-server with it
if [ "${1#-}" != "$1" ] || [ "${1%.conf}" != "$1" ]; then
	set -- valkey-server "$@"
fi

if [ "$1" = 'valkey-server' ]; then
	# The official image compiles valkey with protected-mode off, so a
	# password-less server is reachable through published ports. Debian's
	# binary defaults to on: turn it off unless a config file is given or the
	# caller chose a value.
	case "$2" in
		'' | -?*) case " $* " in
			*' --protected-mode '*) ;;
			*) set -- "$@" --protected-mode no ;;
		esac ;;
	esac

	# allow the container to be started with `--user`; otherwise drop root
	if [ "$(id -u)" = '0' ]; then
		find . \! -user valkey -exec chown valkey '{}' +
		exec setpriv --reuid=valkey --regid=valkey --init-groups "$0" "$@"
	fi
fi

# set an appropriate umask (if one isn't set already), like the official image
um="$(umask)"
if [ "$um" = '0022' ]; then
	umask 0077
fi

exec "$@"
