#!/bin/sh
# The module loading of the official redis:8 entrypoint, in front of the
# local image's own entrypoint.
set -e
if [ "${1#-}" != "$1" ] || [ "${1%.conf}" != "$1" ]; then
	set -- redis-server "$@"
fi
if [ "$1" = 'redis-server' ]; then
	for module in /usr/local/lib/redis/modules/*.so; do
		[ -e "$module" ] || continue
		set -- "$@" --loadmodule "$module"
	done
fi
exec docker-entrypoint.sh "$@"
