#!/usr/bin/env bash
# Golden-file checks for etcc, one file per call (CTest runs one test per file).
#   check.sh ETCC roundtrip FILE        print(parse(FILE)) is a fixed point of print . parse, and
#                                       equals FILE.expected when that file exists
#   check.sh ETCC tasks FILE EXPECTED   `etcc --emit=tasks FILE` equals EXPECTED, and re-running the
#                                       passes on that output changes nothing; a line
#                                       `// etcc-flags: ...` in FILE adds those flags
#   check.sh ETCC render FILE           etcc fails on FILE and its stderr equals FILE.stderr
#                                       (diagnostics rendered in full: location, source line, caret)
# Run from the repository root so file names in diagnostics are stable.
set -uo pipefail
etcc=$1 mode=$2 file=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

case "$mode" in
  roundtrip)
    if ! "$etcc" --color=never "$file" >"$tmp/p1.etir" 2>"$tmp/err1"; then
      echo "FAIL: etcc rejected $file:"; cat "$tmp/err1"; exit 1
    fi
    if ! "$etcc" --color=never - <"$tmp/p1.etir" >"$tmp/p2.etir" 2>"$tmp/err2"; then
      echo "FAIL: etcc rejected its own output for $file:"; cat "$tmp/err2"; cat -n "$tmp/p1.etir"; exit 1
    fi
    if ! diff -u "$tmp/p1.etir" "$tmp/p2.etir"; then
      echo "FAIL: printing $file is not a fixed point (diff above: first print vs print of the reparse)"; exit 1
    fi
    if [ -f "$file.expected" ] && ! diff -u "$file.expected" "$tmp/p1.etir"; then
      echo "FAIL: the printed form of $file differs from $file.expected"; exit 1
    fi
    ;;
  tasks)
    expected=$4
    # shellcheck disable=SC2207
    flags=($(sed -n 's|^// etcc-flags: ||p' "$file" | head -n 1))
    if ! "$etcc" --color=never --emit=tasks "${flags[@]}" "$file" >"$tmp/t1.etir" 2>"$tmp/err1"; then
      echo "FAIL: etcc --emit=tasks failed on $file:"; cat "$tmp/err1"; exit 1
    fi
    if ! diff -u "$expected" "$tmp/t1.etir"; then
      echo "FAIL: the task-level form of $file differs from $expected"; exit 1
    fi
    if ! "$etcc" --color=never --emit=tasks "${flags[@]}" - <"$tmp/t1.etir" >"$tmp/t2.etir" 2>"$tmp/err2"; then
      echo "FAIL: etcc rejected its own task-level output for $file:"; cat "$tmp/err2"; exit 1
    fi
    if ! diff -u "$tmp/t1.etir" "$tmp/t2.etir"; then
      echo "FAIL: the passes are not idempotent on the task-level form of $file (diff above)"; exit 1
    fi
    ;;
  render)
    "$etcc" --color=never "$file" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" -ne 1 ]; then echo "FAIL: expected exit status 1, got $rc"; cat "$tmp/err"; exit 1; fi
    if [ -s "$tmp/out" ]; then echo "FAIL: etcc wrote to stdout on error:"; cat "$tmp/out"; exit 1; fi
    if ! diff -u "$file.stderr" "$tmp/err"; then echo "FAIL: diagnostics differ from $file.stderr"; exit 1; fi
    ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
echo "ok: $mode $file"
