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

# write_screens_graph DIR N TEMPLATE: a graph of N screens named alike (app.S0 … app.S(N-1)), all
# opened from the root, and navigate/dismiss pairs to the middle one by name in TEMPLATE: what a
# request costs against a large graph (a look-up by name must not grow with it).
write_screens_graph() {
    local i
    {
        echo "root: {stack: Home}"
        echo "abilities: {all: [$(for ((i = 0; i < $2; i++)); do printf '%sS%d' "${i:+, }" "$i"; done | sed 's/^, //')]}"
        echo "coordinators:"
        echo "  Home: {opens: [all]}"
        for ((i = 0; i < $2; i++)); do echo "  S$i: {setup: {type: object, properties: {id: {type: string}}}}"; done
    } >"$1/app.yaml"
    cat >"$3" <<T
{"jsonrpc":"2.0","id":{{id}},"method":"navigate","params":{"session":"s{{conn}}","to":"app.S$(($2 / 2))","with":{"id":"42"}}}
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
