#!/usr/bin/env bash
# npm run lint (and the first step of npm test): ESLint over every JS module (eslint.config.mjs),
# clang-format 14 over every C++ file of the repository (.clang-format), and the .d.ts ErrorCode union
# against core/include/attention_lab/error_codes.hpp, the StageId union against core/src/stage_table.cpp,
# and the pages' modulepreload lists against the widget's static imports: all must be clean.
# Fix with: npx eslint --fix .   and   clang-format -i <files>   and   node scripts/error-codes.mjs
#           and   node scripts/stage-ids.mjs
#           and   node scripts/modulepreload.mjs
set -euo pipefail
cd "$(dirname "$0")/.."
echo "== lint: ESLint"
npx eslint --max-warnings 0 .
echo "== lint: clang-format"
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h' 2>/dev/null || find core web tests bench -name '*.[ch]pp')
clang-format --dry-run --Werror --style=file "${files[@]}"
echo "== lint: error codes"
node scripts/error-codes.mjs --check
echo "== lint: stage ids"
node scripts/stage-ids.mjs --check
echo "== lint: modulepreload lists"
node scripts/modulepreload.mjs --check
echo "lint: clean (${#files[@]} C++ files)"
