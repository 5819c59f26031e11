// The widget's Worker (run-worker.js), as the package ships it and in a bundle, and under Trusted Types.
// Served as the package ships it (npx attention-lab, dist/, an import map into node_modules), the worker
// is the file beside this module (RUN_WORKER). A bundler (webpack 5, Vite, Parcel) bundles a Worker's
// script with what it imports, and emits it, only where the code says
// `new Worker(new URL("./run-worker.js", import.meta.url), ...)` in those words: startWorker does so
// wherever this module is not the shipped file (AS_SHIPPED).
// A page whose Content-Security-Policy says require-trusted-types-for 'script' refuses
// `new Worker(string)` (a TypeError: "This document requires 'TrustedScriptURL' assignment"). As shipped,
// the widget makes its Worker's URL through a policy of its own, named POLICY, that passes only
// RUN_WORKER; a page that lists its allowed policies (the trusted-types directive) allows this one by
// name. In a bundle the Worker's URL is the bundler's, and so is the policy (webpack's
// output.trustedTypes). Where the page refuses it, the Worker cannot start: startWorker throws
// AttentionError "trusted_types" naming the policy, and the runner runs on the page's thread instead
// (runner.js).
import { AttentionError, isTrustedTypesRefusal } from "../lib/attention-lab.js";
import { S } from "./strings.js";

/** The widget's Trusted Types policy name (what a page adds to its trusted-types directive). */
export const POLICY = "attention-lab";

/**
 * The widget's run worker beside this module (its URL, as the element hands it to the runner), or null
 * where this module has no URL of its own (bundled into a classic script: the runs stay on the page's
 * thread). Made from a copy of import.meta.url, not as `new URL("./run-worker.js", import.meta.url)`,
 * which a bundler would copy as a file of its own, unbundled, beside the Worker it bundles.
 */
export const RUN_WORKER = (() => {
  try {
    const here = import.meta.url;
    return new URL("./run-worker.js", here).href;
  } catch {
    return null;
  }
})();

/**
 * True where this module is served as the package ships it: its URL is still worker-url.js's, on the
 * page's origin. Merged into a bundle it is the bundle's (or, in webpack, the file: URL of the source).
 */
export const AS_SHIPPED = (() => {
  try {
    const here = new URL(import.meta.url);
    return here.pathname.endsWith("/worker-url.js") && here.origin === globalThis.location?.origin;
  } catch {
    return false;
  }
})();

/** The script URLs the policy passes: the widget's own worker script. */
const OWN_SCRIPTS = new Set(RUN_WORKER === null ? [] : [RUN_WORKER]);

let policy; // undefined: not made yet; null: Trusted Types absent, or the page refused the name

/** The AttentionError of a page whose Trusted Types refuse the widget's Worker. */
export function trustedTypesError() {
  return new AttentionError({ code: "trusted_types", slot: "", message: S.trustedTypes(POLICY), hint: S.trustedTypesHint(POLICY) });
}

/** True when `err` is Trusted Types refusing a script URL (the library's test, one home: values.js). */
export { isTrustedTypesRefusal };

/** The widget's policy: made once per page; null where the page has no Trusted Types or refuses the name. */
function ownPolicy() {
  if (policy === undefined) {
    policy = null;
    const tt = globalThis.trustedTypes;
    if (typeof tt?.createPolicy === "function") {
      try {
        policy = tt.createPolicy(POLICY, {
          createScriptURL(text) {
            if (!OWN_SCRIPTS.has(text)) throw new TypeError(`the ${POLICY} policy passes only the widget's own worker script, not ${text}`);
            return text;
          },
        });
      } catch {
        policy = null; // the page's trusted-types directive does not list the name (new Worker then says whether it matters)
      }
    }
  }
  return policy;
}

/** `url` as a TrustedScriptURL through the widget's policy where the page has Trusted Types, else as it is. */
function scriptUrl(url) {
  return ownPolicy() && OWN_SCRIPTS.has(url) ? policy.createScriptURL(url) : url;
}

/**
 * AttentionError "trusted_types" when this page's Trusted Types would refuse the widget's Worker, else
 * null; known without starting one: the policy was refused, and a script URL given as a string is too.
 */
export function workerRefusal() {
  if (!AS_SHIPPED || typeof globalThis.trustedTypes?.createPolicy !== "function" || ownPolicy() !== null || typeof document === "undefined") return null;
  try {
    document.createElement("script").src = "about:blank"; // never inserted: nothing loads
    return null;
  } catch (err) {
    return isTrustedTypesRefusal(err) ? trustedTypesError() : null;
  }
}

/**
 * A module Worker of `url` (RUN_WORKER, or a test's script); AttentionError "trusted_types" where the
 * page's Trusted Types refuse it. RUN_WORKER in a bundle starts as bundlers read it, so that the Worker
 * is the script the bundler made of run-worker.js and what it imports.
 */
export function startWorker(url) {
  try {
    if (url === RUN_WORKER && !AS_SHIPPED) return new Worker(new URL("./run-worker.js", import.meta.url), { type: "module" });
    return new Worker(scriptUrl(url), { type: "module" });
  } catch (err) {
    if (isTrustedTypesRefusal(err)) throw trustedTypesError();
    throw err;
  }
}
