#!/usr/bin/env bash
# Builds without serving. After it, `import "attention-lab"` works.
#   bash scripts/build.sh          everything (npm run build, npm test): the native core, its doctest
#                                  suite and bench, the six WebAssembly binaries and the kernel bench,
#                                  the generated .d.ts parts, dist/
#   bash scripts/build.sh --page   what the page needs (npm start): the six binaries in web/lib and the
#                                  vendored tokenizer; no native build
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=build-env.sh
source scripts/build-env.sh

page_only=0
[[ "${1:-}" == "--page" ]] && page_only=1
jobs=$(nproc 2>/dev/null || echo 2)

# The page's vendored browser files (GPT-2 tokenizer) from the pinned npm packages.
node scripts/vendor.mjs

# The six binaries the facade picks from at load (CMakeLists.txt says what each is for).
binaries=(attention_core attention_core_fma attention_core_lean attention_core_lean_fma attention_core_mt attention_core_mt_fma)
cmake --preset wasm >/dev/null
if [[ $page_only == 1 ]]; then
  cmake --build --preset wasm -j "$jobs" --target "${binaries[@]}"
else
  # The .d.ts ErrorCode union from the one list of codes (core/include/attention_lab/error_codes.hpp).
  node scripts/error-codes.mjs
  cmake --preset native >/dev/null
  cmake --build --preset native -j "$jobs"
  cmake --build --preset wasm -j "$jobs"
fi
# The glue (attention_core.mjs for the single-thread binaries, attention_core_mt.mjs and its pthread
# worker, .js for browsers and .cjs for Node, for the threaded ones) and the binaries, beside the facade.
cp build/wasm/attention_core.mjs build/wasm/attention_core_mt.mjs \
   build/wasm/attention_core_mt.worker.js build/wasm/attention_core_mt.worker.cjs web/lib/
for binary in "${binaries[@]}"; do cp "build/wasm/$binary.wasm" web/lib/; done
echo "build: web/lib/attention_core.mjs ($(stat -c %s web/lib/attention_core.mjs) bytes) + attention_core.wasm ($(stat -c %s web/lib/attention_core.wasm) bytes)"
[[ $page_only == 1 ]] && exit 0

# The .d.ts class and slot types (ClassName, SlotName, one config interface per class) from the
# core's class recipes, read through the module just built.
node scripts/config-types.mjs
# dist/: the page, the embed example, the widget and the library, ready for any static host.
node scripts/dist.mjs
