#!/bin/sh
# A Docker CLI plugin that makes `docker compose ...` run `docker-compose ...`
# (Compose 1.29 from Debian 12's docker-compose package, which reads the
# Compose Specification). Debian 12 has no Compose v2 plugin; with this one
# the v2 command lines work as written. Install it as a plugin named
# docker-compose, e.g.:
#
#   install -D -m 755 docker/compose-plugin.sh /usr/local/lib/docker/cli-plugins/docker-compose
#
# or, for one shell only: a directory $DOCKER_CONFIG/cli-plugins holding it
# under that name (scripts/docker-test.sh does this).
if [ "${1:-}" = docker-cli-plugin-metadata ]; then
	echo '{"SchemaVersion": "0.1.0", "Vendor": "floe", "Version": "1.29",' \
		'"ShortDescription": "Docker Compose (runs docker-compose)"}'
	exit 0
fi
# The CLI calls a plugin as: docker-compose compose ARGS...
[ "${1:-}" = compose ] && shift
for compose in /usr/bin/docker-compose /usr/local/bin/docker-compose; do
	[ -x "$compose" ] && exec "$compose" "$@"
done
echo "docker compose: docker-compose is not installed (apt-get install docker-compose)" >&2
exit 127
