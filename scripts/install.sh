#!/usr/bin/env bash
# make install / make uninstall: the layout of the tools people install daily (git, ripgrep,
# redis-cli), under PREFIX (default /usr/local), staged under DESTDIR when it is set (packagers):
#   PREFIX/bin/{navd,navctl,nav-tui,navbench,nav-web}
#   PREFIX/share/man/man1/*.1                         (man/, generated from the argument definitions)
#   PREFIX/share/bash-completion/completions/NAME     (swift-argument-parser's completion scripts)
#   PREFIX/share/zsh/site-functions/_NAME
#   PREFIX/share/fish/vendor_completions.d/NAME.fish
#   PREFIX/lib/systemd/user/navd.socket, navd.service (`systemctl --user enable --now navd.socket navd.service`)
#   PREFIX/lib/systemd/user/nav-web.service           (after navd; its token in ~/.local/state/nav-web/token)
#   PREFIX/share/doc/navd/{README.md,LICENSE,PROTOCOL.md,GRAPH.md,openrpc.json}
# CONFIG (default release) names the build whose binaries are installed.
set -euo pipefail
cd "$(dirname "$0")/.."
action=${1:?usage: install.sh install|uninstall}
PREFIX=${PREFIX:-/usr/local}
DESTDIR=${DESTDIR:-}
CONFIG=${CONFIG:-release}
TOOLS=(navd navctl nav-tui navbench nav-web)
root="$DESTDIR$PREFIX"
bin="$root/bin"
man1="$root/share/man/man1"
bash_dir="$root/share/bash-completion/completions"
zsh_dir="$root/share/zsh/site-functions"
fish_dir="$root/share/fish/vendor_completions.d"
unit_dir="$root/lib/systemd/user"
system_unit_dir="$root/lib/systemd/system"
doc_dir="$root/share/doc/navd"
docs=(README.md LICENSE Protocol/PROTOCOL.md Protocol/GRAPH.md Protocol/openrpc.json)

case "$action" in
install)
    built() { echo ".build/$CONFIG/$1"; }
    for t in "${TOOLS[@]}"; do
        [ -x "$(built "$t")" ] || { echo "install: $(built "$t") is not built (make $([ "$CONFIG" = debug ] && echo build-debug || echo build))" >&2; exit 1; }
    done
    install -d "$bin" "$man1" "$bash_dir" "$zsh_dir" "$fish_dir" "$unit_dir" "$system_unit_dir" "$doc_dir"
    for t in "${TOOLS[@]}"; do
        install -m 0755 "$(built "$t")" "$bin/$t"
        install -m 0644 "man/$t.1" "$man1/$t.1"
        "$(built "$t")" --generate-completion-script bash > "$bash_dir/$t"
        "$(built "$t")" --generate-completion-script zsh > "$zsh_dir/_$t"
        "$(built "$t")" --generate-completion-script fish > "$fish_dir/$t.fish"
        chmod 0644 "$bash_dir/$t" "$zsh_dir/_$t" "$fish_dir/$t.fish"
    done
    # The unit names the binary where it will be at run time: PREFIX, not DESTDIR.
    for u in navd.socket navd.service nav-web.service; do
        sed "s|@BINDIR@|$PREFIX/bin|g" "dist/$u.in" > "$unit_dir/$u"
        chmod 0644 "$unit_dir/$u"
    done
    # System-wide, one navd per backend user: navd@USER.socket and navd@USER.service.
    for u in navd@.socket navd@.service; do
        sed "s|@BINDIR@|$PREFIX/bin|g" "dist/system/$u.in" > "$system_unit_dir/$u"
        chmod 0644 "$system_unit_dir/$u"
    done
    for d in "${docs[@]}"; do install -m 0644 "$d" "$doc_dir/"; done
    echo "installed navd $("$bin/navd" --version | cut -d' ' -f2-) under $root"
    echo "  binaries   $bin"
    echo "  man pages  $man1   (man navd, man navctl)"
    echo "  completions bash, zsh, fish"
    echo "  units      $unit_dir/navd.socket, navd.service, nav-web.service   (systemctl --user daemon-reload && systemctl --user enable --now navd.socket navd.service nav-web.service)"
    echo "             $system_unit_dir/navd@.socket, navd@.service   (one navd per backend user: systemctl enable --now navd@USER.socket navd@USER.service)"
    ;;
uninstall)
    for t in "${TOOLS[@]}"; do
        rm -f "$bin/$t" "$man1/$t.1" "$bash_dir/$t" "$zsh_dir/_$t" "$fish_dir/$t.fish"
    done
    rm -f "$unit_dir/navd.socket" "$unit_dir/navd.service" "$unit_dir/nav-web.service"
    rm -f "$system_unit_dir/navd@.socket" "$system_unit_dir/navd@.service"
    for d in "${docs[@]}"; do rm -f "$doc_dir/$(basename "$d")"; done
    rmdir "$doc_dir" 2>/dev/null || true
    echo "removed navd's files from $root (sessions kept in \$XDG_STATE_HOME/navd/ stay)"
    ;;
*) echo "usage: install.sh install|uninstall" >&2; exit 64 ;;
esac
