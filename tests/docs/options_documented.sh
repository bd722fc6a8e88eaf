#!/usr/bin/env bash
# Every option that `etcc --help` and `etc-run --help` list is documented in README.md or
# docs/*.md (under one of its spellings), so that a new option cannot go undocumented.
# Usage: options_documented.sh ETCC ETC_RUN   (run from the repository root)
source "$(dirname "$0")/../harness.sh"
for tool in "$@"; do
  # "  -o,--output TEXT   ..." -> "-o,--output"; only the lines that start with options.
  "$tool" --help | grep -oE '^  (-[a-zA-Z],)?--[a-z][a-z-]+' | tr -d ' ' | sort -u >"$tmp/options"
  [ -s "$tmp/options" ] || fail "$tool --help lists no options"
  while read -r spellings; do
    case "$spellings" in *--help|*--version) continue ;; esac
    found=0
    for o in ${spellings//,/ }; do
      grep -qE -- "(^|[^a-zA-Z-])$o([^a-zA-Z-]|$)" README.md docs/*.md && found=1
    done
    [ "$found" -eq 1 ] || fail "$(basename "$tool") option $spellings is not in README.md or docs/"
  done <"$tmp/options"
done
finish "options documented"
