#!/usr/bin/env bash
# Builds without serving. After it, `import "attention-lab"` works.
#   bash scripts/build.sh                everything (npm run build, npm test): the native core, its
#                                        doctest suite and bench, the six WebAssembly binaries and the
#                                        kernel bench, the generated .d.ts parts, dist/
#   bash scripts/build.sh --first-view   what the page's first view loads (npm start, before it
#                                        serves): the vendored tokenizer and the lean binaries, which
#                                        the page's main thread runs, with their glue
#   bash scripts/build.sh --rest-of-page the six binaries (npm start, while it serves: its server
#                                        holds a request for one of them until this has finished)
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=build-env.sh
source scripts/build-env.sh

mode=${1:-all}
case $mode in
  all | --first-view | --rest-of-page) ;;
  *) echo "build: unknown option $mode (give --first-view, --rest-of-page or nothing)" >&2; exit 2 ;;
esac
jobs=$(nproc 2>/dev/null || echo 2)

# A file into web/lib/ in one rename, so that a server never sends half of one.
place() { cp "$1" "web/lib/$2.tmp$$" && mv -f "web/lib/$2.tmp$$" "web/lib/$2"; }

if [[ $mode != --rest-of-page ]]; then
  # The page's vendored browser files (GPT-2 tokenizer) from the pinned npm packages.
  node scripts/vendor.mjs
fi
cmake --preset wasm >/dev/null

if [[ $mode == --first-view ]]; then
  cmake --build --preset wasm -j "$jobs" --target attention_core_lean attention_core_lean_fma
  place build/wasm/attention_core_lean.wasm attention_core_lean.wasm
  place build/wasm/attention_core_lean_fma.wasm attention_core_lean_fma.wasm
  # The single-thread glue is the same for the four single-thread binaries but for the name of the
  # .wasm it would fetch by default, which the facade never lets it use (it hands over the binary it
  # picked): the lean link's glue, so named, is attention_core.mjs to the byte until --rest-of-page
  # places the file itself (a glue left from an older build might not fit the new binaries).
  sed 's/attention_core_lean\.wasm/attention_core.wasm/g' build/wasm/attention_core_lean.mjs > build/wasm/attention_core_first_view.mjs
  place build/wasm/attention_core_first_view.mjs attention_core.mjs
  echo "build: the first view's binaries (attention_core_lean.wasm, attention_core_lean_fma.wasm) are in web/lib"
  exit 0
fi

# The six binaries the facade picks from at load (CMakeLists.txt and README.md say what each is for).
binaries=(attention_core attention_core_fma attention_core_lean attention_core_lean_fma attention_core_mt attention_core_mt_fma)
if [[ $mode == --rest-of-page ]]; then
  cmake --build --preset wasm -j "$jobs" --target attention_lab_binaries
else
  # The .d.ts ErrorCode union from the one list of codes (core/include/attention_lab/error_codes.hpp).
  node scripts/error-codes.mjs
  # The .d.ts StageId union from the one stage table (core/src/stage_table.cpp).
  node scripts/stage-ids.mjs
  cmake --preset native >/dev/null
  cmake --build --preset native -j "$jobs"
  cmake --build --preset wasm -j "$jobs"
fi
# The glue (attention_core.mjs for the single-thread binaries, attention_core_mt.mjs and its pthread
# worker, .js for browsers and .cjs for Node, for the threaded ones) and the binaries, beside the facade.
# The threaded glue's post-link step again (idempotent): a build folder linked before the step changed
# would otherwise keep the old files.
(cd build/wasm && node ../../scripts/pthread-glue.mjs attention_core_mt)
for file in attention_core.mjs attention_core_mt.mjs attention_core_mt.worker.js attention_core_mt.worker.cjs; do
  place "build/wasm/$file" "$file"
done
for binary in "${binaries[@]}"; do place "build/wasm/$binary.wasm" "$binary.wasm"; done
echo "build: web/lib/attention_core.mjs ($(stat -c %s web/lib/attention_core.mjs) bytes) + attention_core.wasm ($(stat -c %s web/lib/attention_core.wasm) bytes)"
[[ $mode == --rest-of-page ]] && exit 0

# The .d.ts class and slot types (ClassName, SlotName, one config interface per class) from the
# core's class recipes, read through the module just built.
node scripts/config-types.mjs
# dist/: the page, the embed example, the widget and the library, ready for any static host.
node scripts/dist.mjs
