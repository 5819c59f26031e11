#!/usr/bin/env bash
# Installs what attention-lab needs on Debian, only what is missing:
#   apt: cmake, g++, ccache, Emscripten, Eigen, Highway, doctest, nlohmann-json (native tests),
#        clang-format (lint), and with --browser Chromium's headless shell (the browser suite's);
#   npm: the pinned packages of package-lock.json.
# Safe to run again; it does nothing when everything is there.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=apt-install.sh
source scripts/apt-install.sh

want_browser=0
[[ "${1:-}" == "--browser" ]] && want_browser=1

missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v g++ >/dev/null || missing+=(g++)
command -v make >/dev/null || missing+=(make)
# The compiler cache CMakeLists.txt compiles through: a clean clone rebuilds nothing compiled before.
command -v ccache >/dev/null || missing+=(ccache)
# Debian's Emscripten (the wasm preset uses its toolchain file), not an emsdk em++ on PATH.
[[ -f /usr/share/emscripten/cmake/Modules/Platform/Emscripten.cmake ]] || missing+=(emscripten)
[[ -f /usr/include/eigen3/Eigen/Dense ]] || missing+=(libeigen3-dev)
[[ -f /usr/include/hwy/highway.h ]] || missing+=(libhwy-dev)
[[ -f /usr/include/doctest/doctest.h ]] || missing+=(doctest-dev)
[[ -f /usr/include/nlohmann/json.hpp ]] || missing+=(nlohmann-json3-dev)
# npm run lint (part of npm test) checks the C++ layout with Debian's clang-format (14).
command -v clang-format >/dev/null || missing+=(clang-format)
if [[ $want_browser == 1 ]]; then
  command -v chromium-headless-shell >/dev/null || missing+=(chromium-headless-shell)
fi

if ((${#missing[@]})); then
  apt_install setup "${missing[@]}" || exit 1
fi

# npm packages, pinned by package-lock.json; reinstalled when the lock file changes.
stamp=node_modules/.attention-lab-lock
if [[ ! -f $stamp ]] || ! cmp -s package-lock.json "$stamp"; then
  echo "setup: installing npm packages (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json "$stamp"
fi
