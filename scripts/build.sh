#!/usr/bin/env bash
# Builds everything without serving: the native core and its doctest suite, and the WebAssembly
# module that the JS facade (web/lib/attention-lab.js) loads. After it, `import "attention-lab"` works.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=build-env.sh
source scripts/build-env.sh

# The .d.ts ErrorCode union from the one list of codes (core/include/attention_lab/error_codes.hpp).
node scripts/error-codes.mjs

# The page's vendored browser files (GPT-2 tokenizer) from the pinned npm packages.
node scripts/vendor.mjs

jobs=$(nproc 2>/dev/null || echo 2)
cmake --preset native >/dev/null
cmake --build --preset native -j "$jobs"
cmake --preset wasm >/dev/null
cmake --build --preset wasm -j "$jobs"
# attention_core_fma.wasm: the same glue's fused multiply-add binary (relaxed SIMD, issue 21.3).
# attention_core_mt*: the threaded build (pthreads, issue 21.2), its own glue and pthread worker (.js
# for browsers, .cjs for Node), plain and fused multiply-add; attention_core_lean*: without the checkpoint
# and GPT-2 readers (the teaching page's main thread); the facade picks one of the six at load.
cp build/wasm/attention_core.mjs build/wasm/attention_core.wasm build/wasm/attention_core_fma.wasm \
   build/wasm/attention_core_lean.wasm build/wasm/attention_core_lean_fma.wasm \
   build/wasm/attention_core_mt.mjs build/wasm/attention_core_mt.wasm build/wasm/attention_core_mt_fma.wasm \
   build/wasm/attention_core_mt.worker.js build/wasm/attention_core_mt.worker.cjs web/lib/
# The .d.ts class and slot types (ClassName, SlotName, one config interface per class) from the
# core's class recipes, read through the module just built.
node scripts/config-types.mjs
echo "build: web/lib/attention_core.mjs ($(stat -c %s web/lib/attention_core.mjs) bytes) + attention_core.wasm ($(stat -c %s web/lib/attention_core.wasm) bytes)"
# dist/: the page, the embed example, the widget and the library, ready for any static host.
node scripts/dist.mjs
