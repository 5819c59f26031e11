#!/usr/bin/env bash
# What only the benchmark needs (npm run bench calls it after scripts/setup.sh --browser):
#   apt: python3-torch (the PyTorch reference, Debian's 1.13) and libopenblas0-pthread (without it
#   Debian's torch runs on the reference BLAS, ~20x slower, and the ratios would flatter us).
# The TF.js packages are npm devDependencies, installed by scripts/setup.sh from package-lock.json.
# Safe to run again; it does nothing when everything is there. A failure here does not stop the
# bench: the PyTorch rows then say "n/a" with the reason.
set -uo pipefail
cd "$(dirname "$0")/.."

missing=()
dpkg-query -W -f='${Status}' python3-torch 2>/dev/null | grep -q "install ok installed" || missing+=(python3-torch)
dpkg-query -W -f='${Status}' libopenblas0-pthread 2>/dev/null | grep -q "install ok installed" || missing+=(libopenblas0-pthread)

if ((${#missing[@]})); then
  echo "bench setup: installing Debian packages: ${missing[*]}"
  sudo_cmd=()
  if [[ $(id -u) != 0 ]]; then
    if command -v sudo >/dev/null; then sudo_cmd=(sudo); else
      echo "bench setup: need root (or sudo) to run: apt-get install ${missing[*]} (the PyTorch rows will say n/a)" >&2
      exit 0
    fi
  fi
  if ! { "${sudo_cmd[@]}" apt-get update -qq &&
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }; then
    echo "bench setup: apt-get install ${missing[*]} failed (the PyTorch rows will say n/a)" >&2
    exit 0
  fi
fi

# Which BLAS does libblas.so.3 resolve to? Debian picks one by update-alternatives; OpenBLAS's
# pthread build registers itself with a higher priority than the reference BLAS.
blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)
echo "bench setup: libblas.so.3 -> ${blas:-?}"
