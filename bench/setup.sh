#!/usr/bin/env bash
# What only the benchmark needs (npm run bench calls it after scripts/setup.sh --browser):
#   apt: chromium (the page is measured in the browser readers use, not the tests' headless shell);
#   apt: python3-torch (the PyTorch reference, Debian's 1.13) and libopenblas0-pthread (without it
#   Debian's torch runs on the reference BLAS, ~20x slower, and the ratios would flatter us).
# The TF.js packages are npm devDependencies, installed by scripts/setup.sh from package-lock.json.
# Safe to run again; it does nothing when everything is there. A failure here does not stop the
# bench: the PyTorch rows then say "n/a" with the reason.
set -uo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=../scripts/apt-install.sh
source scripts/apt-install.sh

missing=()
command -v chromium >/dev/null || missing+=(chromium)
dpkg-query -W -f='${Status}' python3-torch 2>/dev/null | grep -q "install ok installed" || missing+=(python3-torch)
dpkg-query -W -f='${Status}' libopenblas0-pthread 2>/dev/null | grep -q "install ok installed" || missing+=(libopenblas0-pthread)

if ((${#missing[@]})) && ! apt_install "bench setup" "${missing[@]}"; then
  echo "bench setup: apt-get install ${missing[*]} failed (the PyTorch rows will say n/a)" >&2
  exit 0
fi

# Which BLAS does libblas.so.3 resolve to? Debian picks one by update-alternatives; OpenBLAS's
# pthread build registers itself with a higher priority than the reference BLAS.
blas=$(readlink -f /usr/lib/x86_64-linux-gnu/libblas.so.3 2>/dev/null || true)
echo "bench setup: libblas.so.3 -> ${blas:-?}"
