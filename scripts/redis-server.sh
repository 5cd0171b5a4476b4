#!/usr/bin/env bash
# Throwaway redis-server for streamcite's tests and benchmarks.
#
#   scripts/redis-server.sh install          install Debian's redis-server if missing (needs root)
#   scripts/redis-server.sh start PORT DIR   start one on 127.0.0.1:PORT, no persistence, state in DIR
#   scripts/redis-server.sh stop DIR         stop the one started with DIR (no-op if none)
#   scripts/redis-server.sh status DIR       exit 0 when it is running and answers PING
#
# `start` installs first when needed and is idempotent: if DIR already holds a running server
# on the same port it does nothing. Only the process recorded in DIR/redis.pid is ever stopped.
set -euo pipefail

die() { echo "redis-server.sh: $*" >&2; exit 1; }

find_server() { command -v redis-server || { test -x /usr/bin/redis-server && echo /usr/bin/redis-server; } || true; }

install() {
    if [ -n "$(find_server)" ]; then
        return 0
    fi
    if [ "$(id -u)" != "0" ]; then
        die "redis-server is not installed and we are not root: install Debian's redis-server package"
    fi
    command -v apt-get >/dev/null || die "redis-server is not installed and apt-get is not available"
    export DEBIAN_FRONTEND=noninteractive
    # The package list may be missing on a fresh machine: update once, then install.
    apt-get install -y -q --no-install-recommends redis-server >/dev/null 2>&1 \
        || { apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends redis-server >/dev/null; }
    [ -n "$(find_server)" ] || die "apt-get did not provide redis-server"
    # Debian's package may start a system-wide instance on 6379 where systemd runs; we never
    # use or stop it (our servers get their own port and directory).
}

# proc_running PID: a live (not zombie) redis-server process. A daemonized server's parent is
# PID 1, which in a container may reap it late: a zombie counts as stopped. The name check
# guards against a recycled pid.
proc_running() {
    local pid="$1" state
    [ -r "/proc/$pid/stat" ] || return 1
    [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "redis-server" ] || return 1
    state="$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null | cut -d' ' -f1)"
    [ -n "$state" ] && [ "$state" != "Z" ] && [ "$state" != "X" ]
}

pid_alive() { [ -f "$1/redis.pid" ] && proc_running "$(cat "$1/redis.pid")"; }

ping() {  # ping PORT: succeed when a server answers on 127.0.0.1:PORT
    if command -v redis-cli >/dev/null; then
        [ "$(redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null || true)" = "PONG" ]
    else
        # bash's /dev/tcp: RESP inline PING; a 1 s read timeout keeps this bounded.
        exec 3<>"/dev/tcp/127.0.0.1/$1" 2>/dev/null || return 1
        printf 'PING\r\n' >&3
        local reply=""
        read -r -t 1 reply <&3 || true
        exec 3>&-
        [ "${reply%$'\r'}" = "+PONG" ]
    fi
}

start() {
    local port="${1:?usage: start PORT DIR}" dir="${2:?usage: start PORT DIR}"
    install
    mkdir -p "$dir"
    dir="$(cd "$dir" && pwd)"
    if pid_alive "$dir" && ping "$port"; then
        echo "redis-server already running on 127.0.0.1:$port (pid $(cat "$dir/redis.pid"))"
        return 0
    fi
    rm -f "$dir/redis.pid"
    # No persistence (save "", appendonly no): a test server starts empty and leaves nothing.
    "$(find_server)" --bind 127.0.0.1 --port "$port" --protected-mode yes \
        --save "" --appendonly no --dir "$dir" \
        --daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" \
        --databases 16 --maxclients 10000 \
        || die "redis-server failed to start (see $dir/redis.log)"
    for _ in $(seq 1 100); do  # up to 10 s
        if pid_alive "$dir" && ping "$port"; then
            echo "redis-server running on 127.0.0.1:$port (pid $(cat "$dir/redis.pid"))"
            return 0
        fi
        sleep 0.1
    done
    die "redis-server did not answer on 127.0.0.1:$port within 10 s (see $dir/redis.log)"
}

stop() {
    local dir="${1:?usage: stop DIR}"
    [ -f "$dir/redis.pid" ] || return 0
    local pid
    pid="$(cat "$dir/redis.pid")"
    if proc_running "$pid"; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 100); do  # up to 5 s, then SIGKILL
            proc_running "$pid" || break
            sleep 0.05
        done
        if proc_running "$pid"; then kill -KILL "$pid" 2>/dev/null || true; fi
    fi
    rm -f "$dir/redis.pid"
}

status() {
    local dir="${1:?usage: status DIR}"
    pid_alive "$dir" || return 1
}

cmd="${1:-}"
shift || true
case "$cmd" in
    install) install ;;
    start) start "$@" ;;
    stop) stop "$@" ;;
    status) status "$@" ;;
    *) die "usage: $0 install | start PORT DIR | stop DIR | status DIR" ;;
esac
