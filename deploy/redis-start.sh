#!/bin/sh
# docker-compose.yml's Redis: a password (REDIS_PASSWORD, also in the bot replicas'
# REDIS_URL), the append-only file, and maxmemory-policy noeviction (the bot refuses to
# start on a Redis that evicts). The password goes into a config file only its server
# reads, never onto a command line, where `ps` would show it. Extra arguments go to
# redis-server after the file (e.g. `--port`).
set -eu

if [ -z "${REDIS_PASSWORD:-}" ]; then
  echo 'REDIS_PASSWORD is not set: put one in .env (e.g. the output of `openssl rand -hex 32`)' >&2
  exit 1
fi
# Only characters that need no escaping, neither in redis.conf nor in the REDIS_URL it goes into.
case "$REDIS_PASSWORD" in
  *[!A-Za-z0-9._~-]*)
    echo 'REDIS_PASSWORD may hold only letters, digits and . _ ~ - (e.g. `openssl rand -hex 32`)' >&2
    exit 1
    ;;
esac

conf="${REDIS_CONF_FILE:-/tmp/redis-bot.conf}"
umask 077
printf 'requirepass %s\nappendonly yes\nmaxmemory-policy noeviction\n' "$REDIS_PASSWORD" >"$conf"

if command -v docker-entrypoint.sh >/dev/null 2>&1; then
  # The image's entrypoint drops to its redis user before starting the server: hand it the file.
  if [ "$(id -u)" = 0 ]; then chown redis "$conf"; fi
  exec docker-entrypoint.sh redis-server "$conf" "$@"
fi
exec redis-server "$conf" "$@"
