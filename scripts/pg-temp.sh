#!/usr/bin/env bash
# pg-temp.sh start DIR | stop DIR: a throwaway PostgreSQL server in DIR, listening only on a Unix
# socket in DIR (port 5432), superuser navd, trust authentication. Private: DIR is mode 0700, so
# only its owner (and root) can connect. As root, initdb and the server run as the system user
# `postgres` (`nobody` where it is missing; PostgreSQL refuses to run as root). Prints the libpq
# connection string on start.
set -euo pipefail
cmd=${1:?usage: pg-temp.sh start|stop DIR}
dir=${2:?usage: pg-temp.sh start|stop DIR}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/pg_ctl" ] || { echo "pg-temp: PostgreSQL is not installed (make deps installs it)" >&2; exit 1; }
as=()
owner=$(id -un)
if [ "$(id -u)" = 0 ]; then
    owner=postgres
    id postgres >/dev/null 2>&1 || owner=nobody
    as=(runuser -u "$owner" --)
fi
case $cmd in
start)
    mkdir -p "$dir"
    chmod 700 "$dir"
    if [ "$(id -u)" = 0 ]; then chown "$owner" "$dir"; fi
    if [ ! -f "$dir/data/PG_VERSION" ]; then
        "${as[@]}" "$bin/initdb" -D "$dir/data" -A trust -U navd -E UTF8 --no-sync >/dev/null
    fi
    "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -w -l "$dir/log" \
        -o "-k $dir -p 5432 -c listen_addresses= -c max_connections=100" start >/dev/null </dev/null
    echo "host=$dir port=5432 user=navd dbname=postgres"
    ;;
stop)
    [ -f "$dir/data/PG_VERSION" ] && "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -w -m fast stop >/dev/null 2>&1 || true
    ;;
*) echo "usage: pg-temp.sh start|stop DIR" >&2; exit 2 ;;
esac
