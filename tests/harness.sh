# The shared prologue of the shell tests (sourced): stricter bash, a temporary directory $tmp
# removed on exit, fail() that reports and counts, and finish WHAT that exits with the verdict.
set -uo pipefail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# run NAME EXPECTED_RC ARGS...: $etcc (set by the test) with ARGS, at most 120 s; stdout ->
# $tmp/out, stderr -> $tmp/err. err_has NAME TEXT: stderr holds TEXT.
run() {
  local name=$1 want=$2
  shift 2
  timeout 120 "$etcc" "$@" >"$tmp/out" 2>"$tmp/err" </dev/null
  local rc=$?
  [ "$rc" -eq "$want" ] || { fail "$name: exit status $rc, expected $want"; sed 's/^/  | /' "$tmp/err" | head; return 1; }
}
err_has() { grep -qF -- "$2" "$tmp/err" || { fail "$1: stderr lacks '$2'"; sed 's/^/  | /' "$tmp/err" | head; }; }
finish() {
  if [ "$failures" -ne 0 ]; then echo "$failures failure(s)"; exit 1; fi
  echo "$1: all checks passed"
}
# Writes an i32 .npy (version 1.0, header padded to 64 bytes) of shape DIMS ("2x4", "3") from the
# numbers that follow, which must be as many as the shape holds.
npy_i32() {  # FILE DIMS N...
  python3 - "$@" <<'PY'
import math, struct, sys
path, dims, vals = sys.argv[1], [int(d) for d in sys.argv[2].split("x")], [int(x) for x in sys.argv[3:]]
assert len(vals) == math.prod(dims), f"npy_i32: {len(vals)} numbers for shape {dims}"
shape = "(%s)" % ", ".join(map(str, dims)) if len(dims) > 1 else "(%d,)" % dims[0]
header = "{'descr': '<i4', 'fortran_order': False, 'shape': %s, }" % shape
header += " " * (64 - 10 - len(header) - 1) + "\n"
with open(path, "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    f.write(struct.pack("<%di" % len(vals), *vals))
PY
}
