// ESLint (npm run lint, part of npm test): the recommended rules for every JS module of the library,
// the page, the scripts, the bench and the tests. Generated and vendored files are left out.
import js from "@eslint/js";
import globals from "globals";

export default [
  { ignores: ["web/vendor/**", "web/lib/attention_core.mjs", "web/lib/attention_core_mt.mjs", "web/lib/attention_core_mt.worker.js", "web/lib/attention_core_mt.worker.cjs", "web/lib/attention-lab.cjs", "dist/**", "build/**", "node_modules/**", "test-output/**"] },
  js.configs.recommended,
  {
    rules: {
      // a leading underscore says "unused on purpose" (e.g. a destructured key left out)
      "no-unused-vars": ["error", { varsIgnorePattern: "^_", argsIgnorePattern: "^_", ignoreRestSiblings: true }],
    },
  },
  { files: ["web/**/*.js"], languageOptions: { globals: { ...globals.browser } } },
  { files: ["web/app/run-worker.js"], languageOptions: { globals: { ...globals.worker } } },
  // Node scripts and tests (browser tests also hand functions to the page: both sets of names)
  { files: ["**/*.mjs", "scripts/**", "bench/**", "tests/**"], languageOptions: { globals: { ...globals.node, ...globals.browser } } },
];
