#!/usr/bin/env bash
# Every suite: native doctest (CTest), then the JS library over the real WASM and the page in
# headless Chromium (node:test). Installs and builds what is missing first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --browser
bash scripts/lint.sh
bash scripts/docs.sh
bash scripts/build.sh
echo "== native suite (doctest via CTest)"
ctest --preset native
echo "== native suite under AddressSanitizer + UndefinedBehaviorSanitizer"
cmake --preset sanitize >/dev/null
cmake --build --preset sanitize -j "$(nproc 2>/dev/null || echo 2)"
ctest --preset sanitize
echo "== library and browser suites (node:test)"
node --test --test-concurrency=1 tests/node/ tests/browser/
