// Tables wider than their box (a phone, a wide stage): the first column stays in view (style.css), and
// a cue at the bottom of the box says it scrolls sideways, shown only while the table is wider than it
// and the reader has not scrolled it yet (once they have, the cue has done its job).
// One observer per widget finds every scroll box as it is added, wherever a panel adds it.
import { h } from "./dom.js";

const SELECTOR = ".table-scroll, .grid-scroll";

/** Watches every scroll box in `root`, now and later; `cueText` is what the cue says. */
export function watchScrollBoxes(root, cueText) {
  const update = (box) => {
    const scrolls = box.scrollWidth > box.clientWidth + 1;
    box.dataset.scrolls = String(scrolls);
    box.lastElementChild.hidden = !scrolls || box.scrollLeft > 0;
  };
  const resized = new ResizeObserver((entries) => {
    for (const e of entries) {
      const box = e.target.matches(SELECTOR) ? e.target : e.target.parentElement?.closest(SELECTOR);
      if (box) update(box);
    }
  });
  const watch = (box) => {
    if (box.dataset.scrolls !== undefined) return;
    box.dataset.scrolls = "false";
    box.append(h("p", { class: "scroll-cue", hidden: true, "aria-hidden": "true", dataset: { testid: "scroll-cue" } }, cueText));
    resized.observe(box);
    box.addEventListener("scroll", () => update(box), { passive: true });
    if (box.firstElementChild) resized.observe(box.firstElementChild);
  };
  const added = new MutationObserver((records) => {
    for (const r of records) {
      for (const n of r.addedNodes) {
        if (n.nodeType !== 1) continue;
        if (n.matches(SELECTOR)) watch(n);
        for (const box of n.querySelectorAll(SELECTOR)) watch(box);
      }
    }
  });
  root.querySelectorAll(SELECTOR).forEach(watch);
  added.observe(root, { childList: true, subtree: true });
}
