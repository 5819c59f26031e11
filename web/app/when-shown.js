// A hidden widget waits: an <attention-lab> that is hidden (its own `hidden` attribute with no panel
// names, or display: none on it or on an ancestor, such as a deck's slide that is not near the current
// one or a closed <details>) loads no core and runs nothing until it is shown. A course page with a
// widget on every slide then loads the core for the slides the reader reaches.

/** True when the element's `hidden` attribute hides it whole ("" or "hidden", as the widget's CSS reads it). */
export function hiddenWhole(el) {
  const value = el.getAttribute("hidden");
  return value !== null && (value === "" || value.toLowerCase() === "hidden");
}

/** True when `el` is on the page, not hidden whole, and rendered (it has a box: no display: none on it or above it). */
export function isShown(el) {
  if (!el.isConnected || hiddenWhole(el)) return false;
  return typeof el.checkVisibility === "function" ? el.checkVisibility() : el.getClientRects().length > 0;
}

/**
 * Resolves once `el` is shown (at once when it is): a change of its `hidden` attribute, and its box
 * appearing (ResizeObserver: display: none to a box, here or on an ancestor), are when it is checked
 * again. `wait.now()` resolves it whatever (el.run() asks for the widget). Returns {shown, now}.
 */
export function whenShown(el) {
  let done;
  const shown = new Promise((resolve) => { done = resolve; });
  if (isShown(el)) {
    done();
    return { shown, now() {} };
  }
  const check = () => {
    if (!isShown(el)) return;
    stop();
    done();
  };
  const attrs = new MutationObserver(check);
  attrs.observe(el, { attributes: true, attributeFilter: ["hidden", "style", "class"] });
  const box = typeof ResizeObserver === "function" ? new ResizeObserver(check) : null;
  box?.observe(el);
  // Without ResizeObserver, a slow look every second (a box appearing has no other event).
  const poll = box ? null : setInterval(check, 1000);
  function stop() {
    attrs.disconnect();
    box?.disconnect();
    if (poll !== null) clearInterval(poll);
  }
  return {
    shown,
    now() {
      stop();
      done();
    },
  };
}
