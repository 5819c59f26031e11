// The widget's state in the page URL (for the one widget that owns it, see url-state.js): typing
// replaces the current history entry, a discrete change (or a pause) adds one, and back/forward
// restores the setup and re-runs it when the run is cheap. Also the notices about unusable values.
import { S } from "./strings.js";
import { MAX_VALUE, lockConflicts, readUrlState, urlKeys, withoutLocked, writeUrlState } from "./url-state.js";
import { partialPatch, resetPatch, slotsPatch } from "./lab-model.js";

/** The fields of state `s` that `locked` holds (what back/forward keeps). */
function lockedPart(s, locked) {
  const part = { slotTexts: {} };
  for (const slot of locked) if (s.slotTexts[slot] !== undefined) part.slotTexts[slot] = s.slotTexts[slot];
  if (locked.has("class")) part.className = s.className;
  if (locked.has("seed")) part.seed = s.seed;
  if (locked.has("tokens")) Object.assign(part, { source: s.source, tokens: s.tokens, count: s.count, custom: s.custom });
  if (locked.has("batch")) part.batch = s.batch;
  if (locked.has("mode")) part.training = s.training;
  return part;
}

export function setupUrlPanel(app, problems) {
  const { lab, $ } = app;
  let on = false;
  let lastPush = 0;
  const prefix = app.urlPrefix;
  const keys = urlKeys(lab);
  // The host page's own keys and its #anchor stay; only this widget's keys (under its prefix) change.
  const url = () => writeUrlState(app.state, lab.slots(app.state.className), { keep: location.search, prefix, keys }) + location.hash;

  function showNotices(list) {
    const notices = list.map((p) => (p.key === "class" ? S.urlBadClass(p.value)
      : p.tooLong ? S.urlTooLong(p.key, p.tooLong, MAX_VALUE) : p.cut ? S.urlTokensCut(p.cut, p.kept) : S.urlBadValue(p.key)));
    $("status").textContent = notices.join(" ");
    $("status").classList.toggle("status-warning", notices.length > 0);
  }

  async function restore() {
    if (url() === location.search + location.hash) return; // another key or the #anchor moved: not this widget's state
    const { state: read, problems: found } = readUrlState(location.search, lab, prefix);
    showNotices(found);
    // Back/forward never moves what the exercise locks: the reset keeps it, the URL cannot set it.
    const fromUrl = withoutLocked(read, app.locked);
    const held = lockConflicts(read, app.state, app.locked, "url");
    const { slotTexts: keptSlots, ...kept } = lockedPart(app.state, app.locked);
    const start = { ...app.state, ...resetPatch(), ...kept, slotTexts: { ...resetPatch().slotTexts, ...keptSlots } };
    const patch = { ...resetPatch(), ...kept, slotTexts: start.slotTexts, ...partialPatch(start, fromUrl) };
    const s = { ...start, ...patch };
    app.setState({ ...patch, ...slotsPatch(lab, s.className, s.slotTexts), held });
    if (app.state.lastRun && !app.derived.blocked && app.derived.quick) await app.run();
  }

  showNotices(problems);
  return {
    /** Keeps this widget's state in the page URL, following back/forward (or stops doing so). */
    keep(keep) {
      on = keep;
      window.removeEventListener("popstate", restore);
      if (!on) return;
      history.replaceState(null, "", url());
      window.addEventListener("popstate", restore);
    },
    /** Typing replaces the current history entry; a discrete change (or a pause) adds one. */
    record(discrete) {
      if (!on) return;
      const q = url();
      if (q === location.search + location.hash) return;
      const now = performance.now();
      if (discrete || now - lastPush > 1500) history.pushState(null, "", q);
      else history.replaceState(null, "", q);
      lastPush = now;
    },
  };
}
