#!/usr/bin/env bash
# Installs what building and testing etc needs, from Debian/Ubuntu packages, and nothing else.
# Safe to run again: it installs only what is missing and says what it does.
set -euo pipefail

packages=(cmake make g++ re2c bison libfmt-dev libcli11-dev googletest libgtest-dev nlohmann-json3-dev python3 python3-numpy)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all build dependencies are installed"
  exit 0
fi

echo "setup: installing missing packages: ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "setup: not root and no sudo; run as root: apt-get update && apt-get install -y ${missing[*]}" >&2
  exit 1
fi
"${as_root[@]}" apt-get update -qq
DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
