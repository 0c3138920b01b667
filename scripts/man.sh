#!/usr/bin/env bash
# The man pages in man/, generated from the executables' argument definitions by
# swift-argument-parser's generate-manual tool, run on the debug builds. With --check (make test): a
# page that differs from what the definitions give fails — run `make man` and commit man/.
set -euo pipefail
cd "$(dirname "$0")/.."
# The release date of BuildInfo.version: pages name it, so that they do not change with the day.
MAN_DATE=2026-11-26
TOOLS=(navd navctl nav-tui navbench nav-web)
log=.build/man.log
mkdir -p .build
# The executables come from the debug build (`make man` and `make test` make it first). The tool is
# built as a product of that build, on the ArgumentParser it compiled (the package plugin
# `swift package generate-manual` compiles ArgumentParser again for itself: 15 s).
swift build --product generate-manual > "$log" 2>&1 || { cat "$log" >&2; exit 1; }
bin=$(swift build --show-bin-path)
out=.build/man-pages
for t in "${TOOLS[@]}"; do
    exe=$bin/$t
    [ -x "$exe" ] || { echo "man: $exe is not built: run \`make man\` (it builds the debug executables first)" >&2; exit 1; }
    mkdir -p "$out/$t"
    "$bin/generate-manual" "$exe" --date "$MAN_DATE" --authors "navd's authors" --output-directory "$out/$t" >> "$log" 2>&1 \
        || { cat "$log" >&2; exit 1; }
done
page() { echo "$out/$1/$1.1"; }
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
