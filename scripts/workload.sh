# The navigate/dismiss workload and the setup the benchmark scripts share; sourced by bench.sh,
# instructions.sh and cpu-per-request.sh, so that each measures the same requests.

# write_pairs_template FILE: loadgen's template, navigate/dismiss pairs on the embedded example
# graph, one session per loadgen connection ({{conn}}).
write_pairs_template() {
    cat >"$1" <<'T'
{"jsonrpc":"2.0","id":{{id}},"method":"navigate","params":{"session":"s{{conn}}","to":"shop.Product","with":{"id":"42"}}}
{"jsonrpc":"2.0","id":{{id}},"method":"dismiss","params":{"session":"s{{conn}}"}}
T
}

# open_sessions SOCKET N: sessions s0 … s(N-1) on the navd listening at SOCKET.
open_sessions() {
    local i lines=""
    for ((i = 0; i < $2; i++)); do lines+="{\"jsonrpc\":\"2.0\",\"id\":$i,\"method\":\"session.open\",\"params\":{\"name\":\"s$i\"}}"$'\n'; done
    printf '%s' "$lines" | socat -t 5 - UNIX-CONNECT:"$1" >/dev/null
}

# install_missing PACKAGE…: the Debian packages not installed yet (apt-get update once, only then).
install_missing() {
    local p missing=()
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
    (( ${#missing[@]} == 0 )) && return 0
    echo "installing ${missing[*]}" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
}
