# The shared prologue of the shell tests (sourced): stricter bash, a temporary directory $tmp
# removed on exit, fail() that reports and counts, and finish WHAT that exits with the verdict.
set -uo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
finish() {
  if [ "$failures" -ne 0 ]; then echo "$failures failure(s)"; exit 1; fi
  echo "$1: all checks passed"
}
