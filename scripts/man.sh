#!/usr/bin/env bash
# The man pages in man/, generated from the executables' argument definitions by
# swift-argument-parser's generate-manual plugin (debug builds). With --check (make test): a page
# that differs from what the definitions give fails — run `make man` and commit man/.
set -euo pipefail
cd "$(dirname "$0")/.."
# The release date of BuildInfo.version: pages name it, so that they do not change with the day.
MAN_DATE=2026-11-26
TOOLS=(navd navctl nav-tui navbench)
swift package generate-manual --configuration debug --date "$MAN_DATE" \
    --authors "navd's authors" > .build/man.log 2>&1 || { cat .build/man.log >&2; exit 1; }
# nav-web is a package of its own (Clients/web): its page comes from its debug build (checked for
# warnings as `make web-build` does), by the tool the plugin above built and ran (the plugin itself
# would build nav-web's package again in its own way, 15 s each time).
scripts/web-build.sh >> .build/man.log 2>&1 || { cat .build/man.log >&2; exit 1; }
out=.build/plugins/GenerateManual/outputs
mkdir -p "$out/nav-web"
"$(swift build --show-bin-path)/generate-manual-tool" Clients/web/.build/debug/nav-web --date "$MAN_DATE" \
    --authors "navd's authors" --output-directory "$out/nav-web" >> .build/man.log 2>&1 || { cat .build/man.log >&2; exit 1; }
page() { echo "$out/$1/$1.1"; }
TOOLS+=(nav-web)
if [ "${1:-}" = --check ]; then
    stale=()
    for t in "${TOOLS[@]}"; do cmp -s "$(page "$t")" "man/$t.1" || stale+=("man/$t.1"); done
    if [ ${#stale[@]} -gt 0 ]; then
        echo "man-check: ${stale[*]} differ from the argument definitions: run \`make man\` and commit man/" >&2
        for t in "${TOOLS[@]}"; do diff -u "man/$t.1" "$(page "$t")" >&2 || true; done
        exit 1
    fi
    echo "man-check: man/ matches the argument definitions of ${TOOLS[*]}"
else
    mkdir -p man
    for t in "${TOOLS[@]}"; do cp "$(page "$t")" "man/$t.1"; done
    echo "wrote man/{$(IFS=,; echo "${TOOLS[*]}")}.1"
fi
