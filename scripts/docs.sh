#!/usr/bin/env bash
# npm run docs (also a step of npm test): the API docs, and any warning fails them.
#   C++: Doxygen (Debian's) over core/include/attention_lab -> build/docs/cpp/html/index.html
#   JS:  TypeDoc over web/lib/attention-lab.d.ts          -> build/docs/js/index.html
# TypeDoc lives in tools/docs with its own pinned TypeScript 5: it needs TypeScript's JS API, which the
# project's TypeScript 7 (the native compiler, used for the .d.ts type checks) does not have.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=apt-install.sh
source scripts/apt-install.sh
command -v doxygen >/dev/null || apt_install docs doxygen || exit 1
stamp=tools/docs/node_modules/.attention-lab-lock
if [[ ! -f $stamp ]] || ! cmp -s tools/docs/package-lock.json "$stamp"; then
  npm ci --prefix tools/docs --no-audit --no-fund --loglevel=error
  cp tools/docs/package-lock.json "$stamp"
fi
version=$(node -p 'require("./package.json").version')
rm -rf build/docs
mkdir -p build/docs/cpp
echo "== docs: Doxygen (C++ headers)"
ATTENTION_LAB_VERSION=$version doxygen tools/docs/Doxyfile
echo "== docs: TypeDoc (attention-lab.d.ts)"
# Every public declaration must carry a doc comment: an undocumented one is a warning, and warnings fail.
documented=()
for kind in Function Method Class Constructor Interface Property Accessor TypeAlias Variable Enum EnumMember; do
  documented+=(--requiredToBeDocumented "$kind")
done
tools/docs/node_modules/.bin/typedoc --logLevel Warn --treatWarningsAsErrors --disableSources --readme none --name "attention-lab $version" \
  --validation.notDocumented "${documented[@]}" --sort source-order \
  --tsconfig tools/docs/tsconfig.json --entryPoints web/lib/attention-lab.d.ts --out build/docs/js
echo "docs: build/docs/cpp/html/index.html and build/docs/js/index.html"
