// Tiny DOM builders. Text goes in through textContent only: nothing here parses HTML.

const SVG_NS = "http://www.w3.org/2000/svg";

/**
 * h("p", {class: "x", dataset: {stage: "keys"}, on: {click: fn}}, "text", child, ...)
 * Attribute values are set with setAttribute; `text` children become text nodes.
 */
export function h(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  applyAttrs(node, attrs);
  append(node, children);
  return node;
}

/** The same for SVG elements (created in the SVG namespace). */
export function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG_NS, tag);
  applyAttrs(node, attrs);
  append(node, children);
  return node;
}

function applyAttrs(node, attrs) {
  for (const [key, value] of Object.entries(attrs ?? {})) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "dataset") {
      for (const [k, v] of Object.entries(value)) node.dataset[k] = String(v);
    } else if (key === "on") {
      for (const [event, fn] of Object.entries(value)) node.addEventListener(event, fn);
    } else if (key === "text") {
      node.textContent = String(value);
    } else if (key in PROPS) {
      node[key] = value;
    } else {
      node.setAttribute(key, value === true ? "" : String(value));
    }
  }
}

// Properties that must be set as properties (live state), not attributes.
const PROPS = { value: 1, checked: 1, disabled: 1, selected: 1 };

export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

/** Replace all children of `node`. */
export function replace(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

/**
 * Replace the children of `node` unless the new ones are equal to them (isEqualNode): a render that
 * changed nothing there keeps the nodes, so a button being clicked or holding the keyboard focus stays
 * the one on the page. Only for content whose listeners follow from its attributes (a fix button's
 * data-slot and data-value), since equal nodes keep their old listeners.
 */
export function replaceIfChanged(node, ...children) {
  const next = append(document.createDocumentFragment(), children);
  const same = next.childNodes.length === node.childNodes.length && [...next.childNodes].every((c, i) => c.isEqualNode(node.childNodes[i]));
  if (!same) node.replaceChildren(next);
  return node;
}

/** A lookup by id inside one root (a widget's shadow root): ids are scoped to it. */
export function finder(root) {
  return (id) => {
    const node = root.getElementById(id);
    if (!node) throw new Error(`missing #${id} in the widget`);
    return node;
  };
}

/** Resolves after the browser has painted (so a status shows before long work). */
export function nextPaint() {
  return new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
}

/**
 * Copies `text` to the clipboard and says so in `status`; where the clipboard is not available (an
 * insecure origin, a denied permission), selects `node` for the reader to copy by hand instead.
 */
export async function copyText(text, node, status, copied, failed) {
  try {
    await navigator.clipboard.writeText(text);
    status.textContent = copied;
  } catch {
    const range = document.createRange();
    range.selectNodeContents(node);
    const sel = window.getSelection();
    sel.removeAllRanges();
    sel.addRange(range);
    status.textContent = failed;
  }
}
