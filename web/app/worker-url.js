// The widget's Worker under Trusted Types. A page whose Content-Security-Policy says
// require-trusted-types-for 'script' refuses `new Worker(string)` (a TypeError: "This document requires
// 'TrustedScriptURL' assignment"). The widget makes its Worker's URL through a policy of its own,
// named POLICY, that passes only the widget's own worker script (run-worker.js, named by the element: allowScript); a
// page that lists its allowed policies (the trusted-types directive) allows this one by name. Where the
// page does not, the Worker cannot start: startWorker throws AttentionError "trusted_types" naming the
// policy, and the runner runs on the page's thread instead (runner.js).
import { AttentionError } from "../lib/attention-lab.js";
import { S } from "./strings.js";

/** The widget's Trusted Types policy name (what a page adds to its trusted-types directive). */
export const POLICY = "attention-lab";

/** The script URLs the policy passes: the widget's own worker scripts (allowScript). */
const OWN_SCRIPTS = new Set();

let policy; // undefined: not made yet; null: Trusted Types absent, or the page refused the name

/** The AttentionError of a page whose Trusted Types refuse the widget's Worker. */
export function trustedTypesError() {
  return new AttentionError({ code: "trusted_types", slot: "", message: S.trustedTypes(POLICY), hint: S.trustedTypesHint(POLICY) });
}

/** True when `err` is Trusted Types refusing a script URL (the browser's TypeError). */
export function isTrustedTypesRefusal(err) {
  return /TrustedScriptURL|Trusted ?Types?\b/i.test(String(err?.message ?? err));
}

/** Lets the policy pass `url` (the element's run-worker.js, as its module resolved it). */
export function allowScript(url) {
  OWN_SCRIPTS.add(String(url));
}

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
  if (typeof globalThis.trustedTypes?.createPolicy !== "function" || ownPolicy() !== null || typeof document === "undefined") return null;
  try {
    document.createElement("script").src = "about:blank"; // never inserted: nothing loads
    return null;
  } catch (err) {
    return isTrustedTypesRefusal(err) ? trustedTypesError() : null;
  }
}

/** A module Worker of `url` (one of the widget's own scripts); AttentionError "trusted_types" where the page's Trusted Types refuse it. */
export function startWorker(url) {
  try {
    return new Worker(scriptUrl(url), { type: "module" });
  } catch (err) {
    if (isTrustedTypesRefusal(err)) throw trustedTypesError();
    throw err;
  }
}
