// Panels below the trace (compare, checkpoint) load their code only when first needed: when the panel
// comes near the viewport, or once the page is idle after its first output, whichever is first; a
// hidden panel never loads. This keeps their code out of the first view.

/**
 * Calls `load()` once: when `panel` is within `margin` of the viewport, or when `idle` has resolved
 * and the browser is idle. Nothing happens for a missing or hidden panel. Returns {stop, resume}:
 * stop() drops the observer and the idle call (the widget left the page), resume() waits again if
 * the panel has not loaded yet.
 * @param {HTMLElement | null} panel
 * @param {() => unknown} load
 * @param {Promise<unknown>} idle
 */
export function loadWhenNeeded(panel, load, idle, margin = "400px") {
  if (!panel || panel.hidden) return { stop() {}, resume() {} };
  let done = false;
  let stopped = false;
  let observer = null;
  const start = () => {
    if (done || stopped) return;
    done = true;
    observer?.disconnect();
    observer = null;
    load();
  };
  const arm = () => {
    if (done) return;
    stopped = false;
    if (typeof IntersectionObserver === "function" && !observer) {
      observer = new IntersectionObserver((entries) => entries.some((e) => e.isIntersecting) && start(), { rootMargin: margin });
      observer.observe(panel);
    }
    idle.then(() => (typeof requestIdleCallback === "function" ? requestIdleCallback(start, { timeout: 2000 }) : setTimeout(start, 0)));
  };
  arm();
  return {
    stop() {
      stopped = true;
      observer?.disconnect();
      observer = null;
    },
    resume: arm,
  };
}
