#!/usr/bin/env bash
# pg-temp.sh start DIR | stop DIR: a throwaway PostgreSQL server in DIR, listening only on a Unix
# socket in DIR (port 5432), superuser navd, trust authentication. As root, initdb and the server
# run as `nobody` (PostgreSQL refuses to run as root). Prints the libpq connection string on start.
set -euo pipefail
cmd=${1:?usage: pg-temp.sh start|stop DIR}
dir=${2:?usage: pg-temp.sh start|stop DIR}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/pg_ctl" ] || { echo "pg-temp: PostgreSQL is not installed (make deps installs it)" >&2; exit 1; }
as=()
if [ "$(id -u)" = 0 ]; then as=(runuser -u nobody --); fi
case $cmd in
start)
    mkdir -p "$dir"
    if [ "$(id -u)" = 0 ]; then chown nobody "$dir"; chmod 755 "$dir"; fi
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
