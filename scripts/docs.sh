#!/usr/bin/env bash
# npm run docs (also a step of npm test): the API docs, and any warning fails them.
#   C++: Doxygen (Debian's) over core/include/attention_lab -> build/docs/cpp/html/index.html
#   JS:  TypeDoc over web/lib/attention-lab.d.ts          -> build/docs/js/index.html
#        with docs/index.md as its landing page and the getting-started pages and docs/widget.md,
#        and its model as JSON -> build/docs/js.json (tests/node/docs.test.mjs reads it)
#   The <attention-lab> element: its JSDoc -> custom-elements.json (@custom-elements-manifest/analyzer;
#        shipped in the npm package) -> docs/widget.md; fails when either is stale or the JSDoc misses (or
#        invents) an attribute, event or CSS property of the element (scripts/widget-docs.mjs)
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
echo "== docs: the <attention-lab> element (custom-elements.json, docs/widget.md)"
node scripts/widget-docs.mjs --check
echo "== docs: TypeDoc (attention-lab.d.ts, docs/)"
# Every public declaration must carry a doc comment: an undocumented one is a warning, and warnings fail.
documented=()
for kind in Function Method Class Constructor Interface Property Accessor TypeAlias Variable Enum EnumMember; do
  documented+=(--requiredToBeDocumented "$kind")
done
tools/docs/node_modules/.bin/typedoc --logLevel Warn --treatWarningsAsErrors --disableSources --readme docs/index.md --name "attention-lab $version" \
  --validation.notDocumented "${documented[@]}" --sort source-order \
  --tsconfig tools/docs/tsconfig.json --entryPoints web/lib/attention-lab.d.ts --out build/docs/js --json build/docs/js.json \
  --projectDocuments docs/getting-started/reader.md --projectDocuments docs/getting-started/course-author.md \
  --projectDocuments docs/getting-started/js-developer.md --projectDocuments docs/getting-started/cpp-developer.md \
  --projectDocuments docs/widget.md \
  --highlightLanguages bash --highlightLanguages css --highlightLanguages html --highlightLanguages javascript \
  --highlightLanguages json --highlightLanguages typescript --highlightLanguages cpp --highlightLanguages cmake
echo "docs: build/docs/cpp/html/index.html and build/docs/js/index.html"
