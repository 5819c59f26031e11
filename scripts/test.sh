#!/usr/bin/env bash
# Every suite (npm test, and CI's .ci/run): lint, the API docs, the native doctest suite through CTest
# (plain and under AddressSanitizer + UndefinedBehaviorSanitizer), then the JS library over the real
# WASM and the page in headless Chromium (node:test). Installs and builds what is missing first.
# CONTRIBUTING.md ("The test suite") says where the time goes and why the suites run as they do.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh --browser
bash scripts/lint.sh
bash scripts/docs.sh
bash scripts/build.sh
# shellcheck source=build-env.sh
source scripts/build-env.sh
jobs=$(nproc 2>/dev/null || echo 2)
echo "== native suite (doctest via CTest)"
ctest --preset native -j "$jobs"
echo "== native suite under AddressSanitizer + UndefinedBehaviorSanitizer"
cmake --preset sanitize >/dev/null
cmake --build --preset sanitize -j "$jobs"
ctest --preset sanitize -j "$jobs"
echo "== library and browser suites (node:test)"
# The npm tarball, packed once for the tests that install it (tests/pack.mjs reads this).
rm -rf build/pack && mkdir -p build/pack
npm pack --json --pack-destination build/pack --loglevel=error > build/pack/pack.json
export ATTENTION_LAB_PACK=$PWD/build/pack/pack.json
# Two files at a time: each file is its own process, with its own server on a free port, its own
# Chromium and its own temporary folders.
node --test --test-concurrency="$jobs" tests/node/ tests/browser/
