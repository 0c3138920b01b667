#!/usr/bin/env bash
# make soak: scripts/soak.py against the release navd for SOAK_SECONDS (default 600).
set -euo pipefail
export NAVD_TUNED=${NAVD_TUNED:-1}  # tuned release builds (Package.swift)
cd "$(dirname "$0")/.."
exec python3 scripts/soak.py "${NAVD:-.build/release/navd}" "${SOAK_SECONDS:-600}"
