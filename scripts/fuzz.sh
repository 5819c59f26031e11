#!/usr/bin/env bash
# libFuzzer over the core's input readers (tests/fuzz): fuzz_call_parser, fuzz_validator (with a tiny
# forward when the setup is valid), fuzz_checkpoint_header, fuzz_gpt2_file (a whole GPT-2 file's
# header and layer structure, then a run) and fuzz_torch_save (a torch.save zip, or its data.pkl), each
# built with ASan + UBSan.
#   FUZZ_SECONDS  seconds per target (default 600)
#   FUZZ_TARGETS  which targets, space-separated (default all five, one after another)
# Seeds come from tests/fuzz/corpus/<target>/ (read-only); new corpus entries go to build/fuzz/corpus/.
# Crash inputs are written to tests/fuzz/regressions/<target>/, where
# tests/native/fuzz_regressions_test.cpp replays them. Exits non-zero when a target found anything.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=apt-install.sh
source scripts/apt-install.sh

seconds=${FUZZ_SECONDS:-600}
read -r -a targets <<<"${FUZZ_TARGETS:-fuzz_call_parser fuzz_validator fuzz_checkpoint_header fuzz_gpt2_file fuzz_torch_save}"

# clang 14 and its libFuzzer runtime (Debian: clang-14, libclang-rt-14-dev), only when missing.
missing=()
command -v clang++-14 >/dev/null || command -v clang++ >/dev/null || missing+=(clang-14)
compgen -G "/usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a" >/dev/null || missing+=(libclang-rt-14-dev)
if ((${#missing[@]})); then
  apt_install fuzz "${missing[@]}" || exit 1
fi
compiler=()
command -v clang++ >/dev/null || compiler=(-DCMAKE_CXX_COMPILER=clang++-14)

cmake --preset fuzz "${compiler[@]}" >/dev/null
cmake --build --preset fuzz -j "$(nproc 2>/dev/null || echo 2)"

status=0
for target in "${targets[@]}"; do
  case $target in
    fuzz_call_parser) max_len=4096 dict=tests/fuzz/call_parser.dict ;;
    fuzz_validator) max_len=256 dict= ;;
    fuzz_checkpoint_header) max_len=4096 dict=tests/fuzz/checkpoint_header.dict ;;
    fuzz_gpt2_file) max_len=512 dict= ;;
    fuzz_torch_save) max_len=32768 dict= ;;
    *) echo "fuzz: unknown target $target" >&2; exit 2 ;;
  esac
  work=build/fuzz/corpus/$target
  regressions=tests/fuzz/regressions/$target
  log=build/fuzz/$target.log
  mkdir -p "$work" "$regressions"
  echo "== $target: ${seconds}s, -max_len=$max_len"
  set +e
  "build/fuzz/tests/fuzz/$target" "$work" "tests/fuzz/corpus/$target" \
    -max_total_time="$seconds" -max_len="$max_len" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$regressions/" ${dict:+-dict="$dict"} >"$log" 2>&1
  rc=$?
  set -e
  grep -E "^#[0-9]+[[:space:]]+(INITED|DONE)|^==[0-9]+==ERROR|^SUMMARY|^stat::|artifact_prefix|Test unit written" "$log" || true
  executed=$(sed -n 's/^stat::number_of_executed_units: //p' "$log" | tail -1)
  echo "fuzz: $target: ${executed:-?} executions in ${seconds}s, exit $rc (full log: $log)"
  if [[ $rc != 0 ]]; then
    status=1
    echo "fuzz: $target found a problem; the input is in $regressions/ (replayed by tests/native/fuzz_regressions_test.cpp)"
  fi
done
exit $status
