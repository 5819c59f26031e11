// The run panel and the trace: the Run button and why it is off, progress and cancel, the run's error,
// and every stage card of the last run. After an edit the trace follows: a run the core estimates as
// cheap starts by itself (after a short pause in typing); any other run leaves the cards marked stale,
// with a banner and its own Run button at the top of the results.
import { h, replace } from "./dom.js";
import { S } from "./strings.js";
import { firstDraw, renderTrace } from "./tensor-view.js";
import { errorBox } from "./diagnostic-view.js";
import { buildInput, seedValue, singleSequence, words } from "./lab-model.js";

/** How long typing pauses before a cheap run of the new setup starts. */
const RERUN_PAUSE_MS = 250;

export function setupRunPanel(app) {
  const { lab, $, host, runner } = app;
  let timer = null;
  $("run").addEventListener("click", () => app.run());
  $("stale-run").addEventListener("click", () => app.run());
  $("cancel").addEventListener("click", () => runner.cancel());

  /** Shows a progress bar and the elapsed time once a run has taken 200 ms. */
  function startProgress() {
    const box = $("progress");
    const t0 = performance.now();
    let phase = null;
    const tick = () => {
      const elapsed = performance.now() - t0;
      if (elapsed < 200) return;
      box.hidden = false;
      $("progress-text").textContent = phase ?? S.runningFor((elapsed / 1000).toFixed(1));
      $("cancel").hidden = phase !== null || !runner.busy;
    };
    const interval = setInterval(tick, 100);
    $("run").textContent = S.running;
    return {
      rendering: (i, n) => {
        phase = S.rendering(i, n);
        tick();
      },
      stop: () => {
        clearInterval(interval);
        box.hidden = true;
        $("run").textContent = S.runButton;
      },
    };
  }

  /** Marks a finished run on the host element (data-runs counts them) for anyone waiting on it. */
  function runFinished() {
    host.dataset.runs = String(Number(host.dataset.runs ?? 0) + 1);
  }

  function statusText(s, w) {
    const tokensText = s.source === "book" ? S.tokensBook(S.bookSentence)
      : s.source === "sentence" ? S.tokensSentence(w.join(" "))
        : s.source === "random" ? S.tokensRandom(w.length) : S.tokensCustom(w.length);
    const batchText = singleSequence(lab, s.className) ? "" : S.batchSuffix(s.batch);
    return [tokensText + batchText, s.training ? S.modeNames.train : S.modeNames.eval];
  }

  /** What keeps a blocked setup from running, as a run error: its first error, else the reason. */
  function blockedError(d) {
    const first = [...d.configDiags, ...d.callDiags, ...d.tokens.problems, ...d.inputDiags].find((x) => x.severity === "error");
    if (first) return { code: first.code, slot: first.slots?.[0] ?? "", message: first.message, hint: first.hint ?? "" };
    if (seedValue(app.lab, app.state) === null) return { code: "seed", slot: "seed", message: d.reason, hint: "" };
    return { code: "blocked", slot: "", message: d.reason, hint: "" };
  }

  let inFlight = null;
  let preparing = false;

  /**
   * Makes the tokens of a run that goes to the worker once the page is idle (app.tokensFor keeps them):
   * 1,024 seeded tokens of 768 values take ~40 ms on this thread, which a Run then does not wait for.
   */
  function prepareInput() {
    if (preparing) return;
    preparing = true;
    const make = () => {
      preparing = false;
      const d = app.derived;
      if (d.blocked || app.state.running) return;
      try {
        app.tokensFor(d.config.d_in);
      } catch {
        // tokens the run itself will refuse, with the slot named
      }
    };
    if (typeof requestIdleCallback === "function") requestIdleCallback(make, { timeout: 1000 });
    else setTimeout(make, 0);
  }

  /**
   * Runs the current setup. Resolves to {ok: true, detail} (run-complete's detail) once the trace is on
   * screen, or {ok: false, error} for a failed, cancelled or blocked run (the host hears run-error, but
   * for a cancel). Called while a run is in flight, it waits for it, then runs again unless that run
   * was of this very setup.
   */
  async function run() {
    if (inFlight) {
      const done = await inFlight;
      if (done.ok && !app.derived.stale) return done;
      return run();
    }
    inFlight = runOnce();
    try {
      return await inFlight;
    } finally {
      inFlight = null;
    }
  }

  async function runOnce() {
    clearTimeout(timer);
    const s = app.state;
    const d = app.derived;
    if (d.blocked) {
      const error = blockedError(d);
      host.dispatchEvent(new CustomEvent("run-error", { bubbles: true, composed: true, detail: { ...error } }));
      return { ok: false, error };
    }
    const t0 = performance.now();
    const { config, description: described, key } = d;
    const call = s.call.trim() || described.pythonCall;
    const { className, training } = s;
    const w = words(s);
    const status = S.traceFor(call, ...statusText(s, w));
    app.setState({ running: true, runError: null });
    let result;
    const progress = startProgress();
    try {
      const x = buildInput(lab, s, config, app.tokensFor(config.d_in));
      result = await runner.run({ className, config, x, seed: seedValue(lab, s), training }, { bytes: d.memory, firstDraw });
      host.dataset.computeMs = (performance.now() - t0).toFixed(1); // the forward (and, for big runs, the worker) alone
    } catch (err) {
      progress.stop();
      let runError = null;
      if (err?.code === "cancelled") $("trace-status").textContent = S.cancelled;
      else {
        runError = { code: err?.code ?? "error", slot: err?.slot ?? "", message: err?.message ?? String(err), hint: err?.hint ?? "" };
        host.dispatchEvent(new CustomEvent("run-error", { bubbles: true, composed: true, detail: { ...runError } }));
      }
      runFinished();
      app.setState({ running: false, runError });
      return { ok: false, error: runError ?? { code: "cancelled", slot: "", message: S.cancelled, hint: "" } };
    }
    const seq = Number(host.dataset.runs ?? 0) + 1;
    const lastRun = {
      key, call, status, className, config: described.config, rule: described.outputWidthRule,
      headDim: described.headDim, outputShape: result.output.shape, words: w, seq,
    };
    $("stage-cards").classList.remove("stale");
    const labName = $("lab-name").textContent;
    await renderTrace($("stage-nav"), $("stage-cards"), result.trace, {
      words: w,
      className,
      heads: described.class.heads,
      maskFill: described.class.maskFill,
      queryHeads: described.config.num_heads,
      config: described.config,
      dropout: described.config.dropout ?? 0,
      training,
      headDim: described.headDim,
      output: { width: described.outputWidth, rule: described.outputWidthRule },
      warnings: result.warnings ?? [],
      idPrefix: `run${seq}`,
      host,
      labName: labName ? ` ${labName}` : "",
    }, (i, n) => progress.rendering(i, n));
    progress.stop();
    host.dataset.runMs = (performance.now() - t0).toFixed(1);
    runFinished();
    app.setState({ running: false, lastRun });
    const detail = {
      className, config: { ...described.config }, pythonCall: described.pythonCall, training,
      outputShape: result.output.shape.slice(), output: result.output, stages: result.trace.map((st) => st.id),
      durationMs: performance.now() - t0,
    };
    host.dispatchEvent(new CustomEvent("run-complete", { bubbles: true, composed: true, detail }));
    return { ok: true, detail };
  }

  /** A cheap run of a changed setup starts by itself, unless the reader is predicting (quiz) or autorun is off. */
  function followEdits(d) {
    clearTimeout(timer);
    const s = app.state;
    if (!d.stale || d.blocked || s.running || !d.quick || !app.autorun || s.quiz) return false;
    timer = setTimeout(() => { if (app.derived.stale && !app.derived.blocked) run(); }, RERUN_PAUSE_MS);
    return true;
  }

  function renderRunError(err) {
    if (!err) return replace($("run-error"));
    return replace($("run-error"), errorBox(S.runError, err, { after: err.slot ? h("p", { class: "diag-hint" }, S.seeSlot(err.slot)) : null }));
  }

  return {
    run,
    render(d) {
      const s = app.state;
      $("run").disabled = d.blocked || s.running;
      // One status at a time: the button says "Running…" while a run is on, so "Ready" waits for it.
      // Which binary runs this setup and on how many threads: the page's own lab (one thread) for a small
      // run, the worker's (the cores, on a cross-origin isolated page) for a large one, once it has loaded.
      const inWorker = d.memory !== null && runner.usesWorker(d.memory);
      const where = inWorker ? runner.workerInfo ?? { threads: null, kernel: lab.kernel } : lab;
      // A run held back by the tokens gets their fix beside it, not only in the tokens panel below.
      const tokenFix = d.reason && d.reason === d.tokens.block ? d.tokens.problems.find((p) => p.fix) : null;
      replace($("run-reason"), d.reason ? S.runBlocked(d.reason) : s.running ? "" : S.runReady(where.kernel, where.threads, inWorker),
        tokenFix ? h("button", {
          type: "button", class: "small", part: "button", dataset: { testid: "run-fix" },
          on: { click: () => app.setState(tokenFix.fix, { edit: true, discrete: true }) },
        }, S.useSeeded) : null);
      $("run-reason").dataset.kernel = where.kernel;
      $("run-reason").dataset.threads = where.threads === null ? "" : String(where.threads);
      $("run-reason").dataset.where = inWorker ? "worker" : "page";
      $("run-reason").classList.toggle("blocked", d.blocked);
      renderRunError(s.runError);
      if (d.memory !== null && runner.usesWorker(d.memory) && !d.blocked) {
        // so Run does not wait for the worker: once the widget is in view, within the page's bound (page-memory.js)
        runner.warm({ className: s.className, config: d.description.config, inputShape: d.shape });
        prepareInput();
      }
      const following = followEdits(d);
      const stale = Boolean(s.lastRun) && d.stale;
      if (s.lastRun) {
        $("stage-cards").classList.toggle("stale", stale);
        $("trace-status").textContent = stale ? S.traceStale(s.lastRun.call) : s.lastRun.status;
        $("trace-status").classList.toggle("stale-note", stale);
      }
      // The banner: the cards are of an older setup, and this one will not run by itself.
      const banner = $("stale-banner");
      banner.hidden = !stale || following || s.running;
      if (!banner.hidden) {
        $("stale-text").textContent = d.blocked ? S.staleBlocked(d.reason) : S.staleBanner;
        $("stale-run").disabled = d.blocked;
      }
    },
  };
}
