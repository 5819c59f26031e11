// Keys typed inside the widget stay inside it. In Shadow DOM a key event that leaves the shadow root is
// retargeted to the host: the page's shortcut handlers (Reveal.js, impress.js, a docs site's "/" search,
// keyboard-driven players) see `document.activeElement` and `event.target` as <attention-lab>, not as the
// text field the reader types in, so their own check "is the reader typing in a field?" says no and a
// "." typed into dropout blacks out a Reveal slide, Space flips it. The widget answers that check itself:
// a key that its focused control uses (every key in a text field or a select; Space and Enter on a
// button; what the widget's own handlers took, such as the tabs' and the heatmap's arrow keys) stops at
// the shadow root, after the widget's own listeners have had it. Its default action (typing, a click,
// Enter's run) is untouched: stopPropagation is not preventDefault.
//
// What still reaches the page: Tab (focus traps of a host's dialog), Escape (a host's dialog closes),
// Ctrl/Cmd combinations (the page's own shortcuts, as for a field outside a shadow root), and keys on
// controls that do not use them (a "." with a button focused reaches the deck as it would without the
// widget).

/** Input types that are clicked, not typed into (every other type takes the keys as its text, number, date...). */
const CLICK_INPUTS = new Set(["button", "submit", "reset", "checkbox", "radio", "image", "file", "color"]);
/** Keys that act on a focused button-like control (a click, a check). */
const CLICK_KEYS = new Set([" ", "Spacebar", "Enter"]);
/** Keys that move within a group of radio buttons (the browser's own default action). */
const MOVE_KEYS = new Set(["ArrowUp", "ArrowDown", "ArrowLeft", "ArrowRight"]);
/** Keys a host page needs even while a field has focus. */
const PASSING_KEYS = new Set(["Tab", "Escape", "Esc"]);

/** True when `node` takes typed text (or, like a select or a range, every key) as its own. */
export function isField(node) {
  if (!node || node.nodeType !== 1) return false;
  if (node.isContentEditable) return true;
  const tag = node.localName;
  if (tag === "textarea" || tag === "select") return true;
  return tag === "input" && !CLICK_INPUTS.has(String(node.type).toLowerCase());
}

/** True when `node` is a control that Space or Enter activates (a button, a checkbox, a radio, a summary, a [role=button]...). */
function isControl(node) {
  if (!node || node.nodeType !== 1) return false;
  const tag = node.localName;
  return tag === "button" || tag === "summary" || tag === "a" || (tag === "input" && CLICK_INPUTS.has(String(node.type).toLowerCase())) ||
    ["button", "tab", "checkbox", "radio", "switch", "menuitem", "option"].includes(node.getAttribute("role"));
}

/** True when the key `key` acts on the control `node`: Space and Enter on any; the arrows on a radio button. */
function controlUses(node, key) {
  if (!isControl(node)) return false;
  return CLICK_KEYS.has(key) || (MOVE_KEYS.has(key) && node.localName === "input" && String(node.type).toLowerCase() === "radio");
}

/** True when the key event `e` is the widget's own (see the comment above): it then stops at the shadow root. */
export function keyIsWidgets(e) {
  if (PASSING_KEYS.has(e.key) || ((e.ctrlKey || e.metaKey) && !e.altKey)) return false;
  if (e.defaultPrevented) return true; // one of the widget's own handlers used it
  const target = e.composedPath()[0];
  return isField(target) || controlUses(target, e.key);
}

/** Keeps the widget's own keys (keyIsWidgets) inside `root`, the widget's shadow root. */
export function guardKeys(root) {
  const stop = (e) => {
    if (keyIsWidgets(e)) e.stopPropagation();
  };
  for (const type of ["keydown", "keypress", "keyup"]) root.addEventListener(type, stop);
}
