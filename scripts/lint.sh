#!/usr/bin/env bash
# make test's style check: swift-format (the toolchain's) with .swift-format, over every Swift file.
# Its rules must hold (imports ordered, no trailing whitespace or doubled blank lines, case
# patterns binding with `let` each, numeric literals grouped, lowerCamelCase, …); its layout
# findings (indentation of continuation lines, line breaks) are not checked, as the tree is not
# laid out by swift-format. Prints each finding and exits 1 if there is any.
set -euo pipefail
cd "$(dirname "$0")/.."
layout='\[(Indentation|AddLines|RemoveLine|LineLength|Spacing|TrailingComma)\]'
findings=$(swift format lint --recursive --configuration .swift-format Sources Clients Tests Fuzz Benchmarks 2>&1 | grep -Ev "$layout" || true)
if [ -n "$findings" ]; then
    echo "$findings" >&2
    echo "lint: $(echo "$findings" | wc -l) finding(s) of swift-format's rules (.swift-format); fix them" >&2
    exit 1
fi
echo "lint: swift-format's rules hold in $(git ls-files '*.swift' | wc -l) files"
