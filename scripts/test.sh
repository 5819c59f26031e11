#!/usr/bin/env bash
# Every suite: native doctest (CTest), then the JS library over the real WASM and the page in
# headless Chromium (node:test). Installs and builds what is missing first.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --browser
bash scripts/build.sh
echo "== native suite (doctest via CTest)"
ctest --preset native
echo "== library and browser suites (node:test)"
node --test --test-concurrency=1 tests/node/ tests/browser/
