// Real GPT-2 weights: one layer's attention from a .safetensors or torch.save file the reader chooses (file picker or
// drag and drop onto the panel), read with lab.loadCheckpoint (only the header and the slices it needs,
// through File.slice: the page never reads the file whole) in the page's worker (checkpoint-load.js:
// a header of a million keys never freezes the page), the loader's report (keys used, ignored with
// reasons, a few hundred listed at most; missing, transposed, where each setting came from), then that
// layer run on the reader's tokens (GPT-2 BPE via the vendored gpt-tokenizer, or token ids typed
// directly) with its input from lab.checkpointInput (also in the worker), traced in eval mode (in the worker
// when the core's estimate of the run is large, checkpoint-load.js traceLayer) and
// shown with the same stage cards as the page.
// Every error (AttentionError .code/.message/.hint) is shown in the panel; the rest of the page goes on.
import { h, replace } from "./dom.js";
import { S } from "./strings-panels.js";
import { bytesText, shapeText, thousands } from "./format.js";
import { renderTrace } from "./tensor-view.js";
import { seedValue } from "./lab-model.js";
import { errorBox } from "./diagnostic-view.js";
import { setupCheckpointTokens } from "./checkpoint-tokens.js";

/** The ignored-keys table starts open up to this many rows (a full GPT-2 file has ~150). */
const IGNORED_OPEN = 24;

let fileCode = null;
/**
 * What a chosen file needs (checkpoint-load.js: reading it; checkpoint-code.js: its code and checks), as
 * one object: fetched once, when the first file is chosen, not with the panel (which the page fetches
 * right after its first output, for every reader).
 */
function loadFileCode() {
  fileCode ??= Promise.all([import("./checkpoint-load.js"), import("./checkpoint-code.js")]).then(([read, code]) => ({ ...read, ...code }));
  return fileCode;
}

export function setupCheckpointPanel(app) {
  const { lab } = app;
  /** The class a GPT-2 layer loads into: the core says which (MultiHeadAttention). */
  const targetClass = lab.classes.find((name) => lab.classFacts(name).loadsCheckpoints);
  const $ = app.$;
  const section = $("checkpoint");
  const body = $("checkpoint-body");
  const state = { file: null, module: null, layer: 0, loadSeq: 0, runSeq: 0, runs: 0 };

  // ---- choosing a file ----
  const fileInput = h("input", { type: "file", id: "ckpt-file", accept: ".safetensors,.pth,.pt,.bin", "aria-describedby": "ckpt-file-name", part: "input", dataset: { testid: "ckpt-file" } });
  const fileName = h("p", { id: "ckpt-file-name", class: "muted", dataset: { testid: "ckpt-file-name" } }, S.ckptNoFile);
  const dropZone = h("div", { class: "drop-zone", dataset: { testid: "ckpt-drop" } },
    h("p", { class: "drop-title" }, S.ckptDropTitle),
    h("div", { class: "field" }, h("label", { for: "ckpt-file" }, S.ckptFileLabel), fileInput),
    fileName);

  // ---- options ----
  const field = (id, label, hint, value = "") => {
    const input = h("input", { type: "text", id, inputmode: "numeric", autocomplete: "off", value, "aria-describedby": `${id}-hint ${id}-error`, part: "input", dataset: { testid: id } });
    const hintNode = h("p", { id: `${id}-hint`, class: "muted", dataset: { testid: `${id}-hint` } }, hint);
    const error = h("p", { id: `${id}-error`, class: "field-error", hidden: true, dataset: { testid: `${id}-error` } }, S.ckptFieldBad);
    return { input, hintNode, error, node: h("div", { class: "field" }, h("label", { for: id }, label), input, hintNode, error) };
  };
  const layerField = field("ckpt-layer", S.ckptLayerLabel, S.ckptLayerHint, "0");
  const headsField = field("ckpt-heads", S.ckptHeadsLabel, S.ckptHeadsHint(lab.gpt2Sizes));
  const contextField = field("ckpt-context", S.ckptContextLabel, S.ckptContextHint);
  const targetRadio = (value, text) => h("label", { for: `ckpt-target-${value}` },
    h("input", { type: "radio", name: "ckpt-target", value, id: `ckpt-target-${value}`, checked: value === "new", dataset: { testid: `ckpt-target-${value}` } }),
    " ", h("span", {}, text));
  const targetNote = h("p", { class: "muted", dataset: { testid: "ckpt-target-note" } });
  const target = h("fieldset", { class: "radio-group ckpt-target" }, h("legend", {}, S.ckptTargetLegend),
    targetRadio("new", S.ckptTargetNew), targetRadio("current", S.ckptTargetCurrent), targetNote);
  const loadButton = h("button", { type: "button", class: "primary", part: "button", disabled: true, dataset: { testid: "ckpt-load" } }, S.ckptLoad);
  const status = h("div", { class: "ckpt-status", "aria-live": "polite", dataset: { testid: "ckpt-status" } });
  const report = h("div", { class: "ckpt-report", dataset: { testid: "ckpt-report" } });
  const codeNode = h("code");

  // ---- running the layer ----
  const runButton = h("button", { type: "button", class: "primary", part: "button", dataset: { testid: "ckpt-run" } }, S.ckptRun);
  const runError = h("div", { class: "diagnostics", "aria-live": "assertive", dataset: { testid: "ckpt-run-error" } });
  const runTitle = h("h3", { id: "ckpt-run-title" });
  const runIntro = h("p", { class: "muted" });
  const traceStatus = h("p", { class: "trace-status", dataset: { testid: "ckpt-trace-status" } });
  const stageNav = h("nav", { class: "stage-nav", "aria-label": S.ckptStagesNav });
  const stageCards = h("div", { class: "stage-cards", dataset: { testid: "ckpt-stage-cards" } });
  const agreement = h("p", { class: "muted", dataset: { testid: "ckpt-agreement" } });
  const tokens = setupCheckpointTokens(runError, () => gpt2?.tokensChanged());
  // The whole model on the same tokens ("trace this layer" loads that layer here); its code comes with its first run.
  const gpt2Slot = h("div", { class: "gpt2-slot" });
  let gpt2 = null;
  const gpt2Section = async () => {
    const { setupGpt2Section } = await import("./gpt2-panel.js");  // fetched once, then from the module map
    gpt2 ??= setupGpt2Section(app, {
      async traceLayer(layer, chosen) {
        layerField.input.value = String(layer);
        await load();
        if (state.module && state.layer === layer) await runLayer(chosen);
        runTitle.scrollIntoView({ block: "start" });
      },
      runAgain: () => runWholeModel(), input: () => wholeModelInput(),
    });
    gpt2Slot.replaceWith(gpt2.node);  // once: a second caller finds the slot gone
    return gpt2;
  };
  const runBox = h("div", { class: "ckpt-run", hidden: true, role: "group", "aria-labelledby": "ckpt-run-title", dataset: { testid: "ckpt-run-box" } },
    ...tokens.nodes, gpt2Slot,
    runTitle, runIntro,
    h("div", { class: "run-row" }, runButton), runError, traceStatus, agreement, stageNav, stageCards);

  replace(body,
    h("div", { class: "ckpt-grid" }, dropZone,
      h("div", { class: "ckpt-options" }, layerField.node, headsField.node, contextField.node)),
    target, h("div", { class: "run-row" }, loadButton), status, report, runBox);

  // ---- wiring ----
  const chooseFile = async (file) => {
    if (!file) return;
    state.file = file;
    fileName.textContent = S.ckptFileName(file.name, bytesText(file.size));
    loadButton.disabled = false;
    gpt2?.reset();  // in this task, as the load starts: nothing of the previous file stays on screen (none yet before the first)
    state.wholeModelKey = null;
    await loadAndRun();
  };
  /**
   * Loads the layer, then runs the whole model once per file and head count: a file chosen before
   * num_heads is typed, then "Load the layer", ends on the same page as num_heads typed first.
   */
  async function loadAndRun() {
    const file = state.file;
    await load();
    const key = headsField.input.value.trim();  // the head count the whole model last ran with
    if (state.file !== file || !state.module || state.wholeModelKey === key) return;
    state.wholeModelKey = key;
    await runWholeModel();
  }
  fileInput.addEventListener("change", () => chooseFile(fileInput.files?.[0]));
  const hasFiles = (e) => [...(e.dataTransfer?.types ?? [])].includes("Files");
  section.addEventListener("dragover", (e) => {
    if (!hasFiles(e)) return;
    e.preventDefault(); // allows the drop
    e.dataTransfer.dropEffect = "copy";
    dropZone.classList.add("dragover");
  });
  section.addEventListener("dragleave", (e) => {
    if (!section.contains(e.relatedTarget)) dropZone.classList.remove("dragover");
  });
  section.addEventListener("drop", (e) => {
    e.preventDefault(); // the browser would open the file instead
    dropZone.classList.remove("dragover");
    chooseFile(e.dataTransfer?.files?.[0]);
  });
  loadButton.addEventListener("click", () => loadAndRun());
  for (const f of [layerField, headsField, contextField]) {
    f.input.addEventListener("keydown", (e) => { if (e.key === "Enter" && state.file) loadAndRun(); });
    // a load error was about the fields as they were: once one changes, it no longer describes them
    f.input.addEventListener("input", () => {
      if (!status.querySelector("[data-testid=ckpt-error]")) return;
      f.input.removeAttribute("aria-invalid");
      replace(status, h("p", { class: "muted", role: "status", dataset: { testid: "ckpt-reload" } }, S.ckptOptionsChanged));
    });
  }
  runButton.addEventListener("click", () => runLayer());  // the panel's tokens

  /** The whole model on the panel's tokens (a file of one attention layer says it cannot). */
  async function runWholeModel() {
    const input = await wholeModelInput();
    if (!input) return;
    const section = await gpt2Section();  // its code comes with the first run: another file may be chosen meanwhile
    if (input.file === state.file) await section.run(input);
  }

  /** What the whole model runs on: the file, the panel's tokens, the head count, a decoder (ids -> text) or null; null when the tokens are not valid. */
  async function wholeModelInput() {
    const t = await tokens.tokenIds();
    if (!t) return null;
    const numHeads = readNumber(headsField, 1) ?? undefined;
    const decode = await tokens.decoder();
    return { file: state.file, tokens: t, numHeads: numHeads ?? undefined, decode: decode ? (ids) => decode(ids) : null };
  }

  const currentTarget = () => (body.querySelector("#ckpt-target-current").checked ? "current" : "new");

  /** A whole number from a field ("" -> undefined), or null (and the field marked) when it is not one. */
  function readNumber(f, min) {
    const t = f.input.value.trim();
    const ok = t === "" || (/^\d{1,9}$/.test(t) && Number(t) >= min);
    f.error.hidden = ok;
    if (ok) f.input.removeAttribute("aria-invalid");
    else f.input.setAttribute("aria-invalid", "true");
    return ok ? (t === "" ? undefined : Number(t)) : null;
  }

  async function load() {
    const file = state.file;
    if (!file) return;
    const layer = readNumber(layerField, 0);
    const numHeads = readNumber(headsField, 1);
    const context = readNumber(contextField, 1);
    if (layer === null || numHeads === null || context === null) return;
    const seq = ++state.loadSeq;
    state.module = null;
    runBox.hidden = true;
    replace(report);
    replace(status, h("p", { class: "muted" }, S.ckptReading(file.name)));
    try {
      const options = { layer: layer ?? 0 };
      if (numHeads !== undefined) options.num_heads = numHeads;
      if (context !== undefined) options.context_length = context;
      if (currentTarget() === "current") {
        const d = app.derived.description;
        if (app.state.className !== targetClass || !d?.ok) throw { code: "checkpoint_target", message: S.ckptTargetNeedsMha, hint: "" };
        // Made where the file is read, from this setup and seed (the module comes back as data).
        options.into = { className: targetClass, config: app.derived.config, seed: seedValue(app.lab, app.state) ?? 123 };
      }
      const code = await loadFileCode();
      const { module, report: r, bytesRead, format } = await code.loadCheckpoint(lab, app.runner, file, options);
      if (seq !== state.loadSeq) return;
      state.module = module;
      state.layer = layer ?? 0;
      showReport(file, module, r, { bytesRead, format }, code);
    } catch (err) {
      if (seq !== state.loadSeq) return;
      replace(status, errorBox(S.ckptLoadError, interrupted(err), { testid: "ckpt-error", showCode: true }));
      // the field the error names is marked until it is edited (the error's hint says what it needs)
      ({ layer: layerField, num_heads: headsField, context_length: contextField })[err?.slot]?.input.setAttribute("aria-invalid", "true");
    }
  }

  function showReport(file, module, r, { bytesRead, format }, { loadCode, attnPrefix }) {
    const call = lab.describe(module.className, module.config).pythonCall ?? module.className;
    replace(status, h("div", { class: "verdict agree", dataset: { testid: "ckpt-summary" } },
      h("p", {}, S.ckptLoaded(state.layer, file.name, call)),
      bytesRead === null ? null : h("p", { class: "verdict-why" }, S.ckptBytesRead(bytesText(bytesRead), bytesText(file.size)))));
    layerField.hintNode.textContent = r.maxLayer >= 0 ? `${S.ckptLayerHint} ${S.ckptLayerRange(r.maxLayer)}` : S.ckptLayerHint;
    const transposed = new Set(r.transposed);
    const sourceKeys = [...Object.keys(S.ckptSourceNames), ...Object.keys(r.sources).filter((k) => !(k in S.ckptSourceNames))];
    replace(report,
      h("h3", {}, S.ckptSourcesTitle),
      h("dl", { class: "ckpt-sources", dataset: { testid: "ckpt-sources" } },
        sourceKeys.filter((k) => r.sources[k]).map((k) => h("div", { class: "fact", dataset: { source: k } },
          h("dt", {}, h("code", {}, S.ckptSourceNames[k] ?? k)), h("dd", {}, r.sources[k])))),
      h("div", { class: "ckpt-layout", dataset: { testid: "ckpt-layout" } },
        h("h3", { dataset: { testid: "ckpt-mapping-title" } }, S.ckptMappingTitle(r.layoutName)),
        h("ul", { class: "ckpt-keys", dataset: { testid: "ckpt-mapping", layout: r.layout } }, r.mapping.map((line) => h("li", {}, h("code", {}, line)))),
        h("p", { class: "muted", dataset: { testid: "ckpt-mapping-same" } }, S.ckptMappingSame)),
      h("h3", {}, S.ckptUsedTitle(r.used.length)),
      h("ul", { class: "ckpt-keys", dataset: { testid: "ckpt-used" } }, r.used.map((k) =>
        h("li", { dataset: { key: k, transposed: String(transposed.has(k)) } }, h("code", {}, k),
          transposed.has(k) ? h("span", { class: "tag tag-info" }, S.ckptTransposed) : null))),
      h("h3", {}, S.ckptMissingTitle(r.missing.length)),
      r.missing.length
        ? h("ul", { class: "ckpt-keys", dataset: { testid: "ckpt-missing" } }, r.missing.map((k) => h("li", { dataset: { key: k } }, h("code", {}, k), " ", h("span", { class: "muted" }, S.ckptMissingNote))))
        : h("p", { class: "muted", dataset: { testid: "ckpt-missing" } }, S.ckptMissingNone),
      h("details", { class: "ckpt-ignored", open: r.ignoredCount <= IGNORED_OPEN },
        h("summary", {}, S.ckptIgnoredTitle(thousands(r.ignoredCount))),
        h("div", { class: "table-scroll" }, h("table", { class: "params", dataset: { testid: "ckpt-ignored" } },
          h("caption", { class: "sr-only" }, S.ckptIgnoredTitle(thousands(r.ignoredCount))),
          h("thead", {}, h("tr", {}, h("th", { scope: "col" }, S.ckptIgnoredKey), h("th", { scope: "col" }, S.ckptIgnoredReason))),
          h("tbody", {}, r.ignored.map((x) => h("tr", { dataset: { key: x.key } }, h("th", { scope: "row" }, h("code", {}, x.key)), h("td", {}, x.reason)))))),
        r.ignoredCount > r.ignored.length
          ? h("p", { class: "muted", dataset: { testid: "ckpt-ignored-more" } }, S.ckptIgnoredMore(thousands(r.ignoredCount - r.ignored.length)))
          : null),
      h("div", { class: "table-scroll" }, h("table", { class: "params", dataset: { testid: "ckpt-params" } },
        h("caption", {}, S.ckptParamsCaption),
        h("thead", {}, h("tr", {}, h("th", { scope: "col" }, S.paramName), h("th", { scope: "col" }, S.paramShape))),
        h("tbody", {}, module.parameters().map((p) => h("tr", {}, h("th", { scope: "row" }, h("code", {}, p.name)), h("td", {}, shapeText(p.shape))))))),
      h("h3", {}, S.ckptCode),
      h("pre", { class: "code", tabindex: "0", dataset: { testid: "ckpt-code" } }, codeNode));
    state.loadLines = loadCode(file.name, module, r, call, format);
    state.attnPrefix = attnPrefix(r);
    codeNode.textContent = state.loadLines.join("\n");
    // The run: GPT-2-size files tokenize text; a small test file's vocabulary only takes ids.
    runTitle.textContent = S.ckptRunTitle(state.layer);
    runIntro.textContent = S.ckptRunIntro(state.layer);
    replace(runError);
    replace(stageNav);
    replace(stageCards);
    traceStatus.textContent = "";
    runBox.hidden = false;
    // A file of GPT-2's vocabulary (or width) takes the sentence; the reader's choice then stays while
    // the file does (loading another layer of it keeps it).
    if (state.kindFor !== file) {
      state.kindFor = file;
      tokens.setKind(r.gpt2Vocab || lab.gpt2Sizes.some((g) => g.n_embd === module.config.d_in) ? "text" : "ids");
    }
  }

  /** Traces the loaded layer on `chosen` ({ids, words}: the whole model's, when its "Trace layer N" button asked), or the panel's. */
  async function runLayer(chosen) {
    const module = state.module;
    const file = state.file;
    if (!module || !file) return;
    replace(runError);
    const t = chosen ?? (await tokens.tokenIds());
    if (!t) return;
    const seq = ++state.runSeq;
    runButton.disabled = true;
    try {
      const code = await loadFileCode();  // (fetched with the file)
      // (1, num_tokens, d): ln_1 of what the blocks before this layer leave (layer 0: of wte + wpe)
      const x = await code.checkpointInput(lab, app.runner, file, { tokenIds: t.ids, layer: state.layer, num_heads: module.config.num_heads });
      if (seq !== state.runSeq || module !== state.module) return;
      const trace = await code.traceLayer(lab, app.runner, module, x);
      if (seq !== state.runSeq || module !== state.module) return;
      const call = lab.describe(module.className, module.config).pythonCall ?? module.className;
      state.runs += 1;
      traceStatus.textContent = S.ckptTraceFor(state.layer, call, t.ids.length, t.ids.length > 12 ? `${t.ids.slice(0, 12).join(", ")}, …` : t.ids.join(", "));
      const labName = $("lab-name").textContent;
      await renderTrace(stageNav, stageCards, trace, {
        words: t.words,
        className: module.className,
        heads: lab.classFacts(module.className).heads,
        maskFill: lab.classFacts(module.className).maskFill,
        config: module.config,
        dropout: 0,
        training: false,
        headDim: module.headDim,
        output: { width: module.outputWidth, rule: module.outputWidthRule },
        idPrefix: `ckpt${state.runs}`,
        anchorPrefix: "ckpt-",
        host: app.host,
        labelledBy: "ckpt-run-title lab-name",
        why: { input: S.ckptInputWhy(state.layer) },
        labName: ` ${S.ckptTraceName(state.layer)}${labName ? ` ${labName}` : ""}`,
      });
      showAgreement(trace, t.ids, code.weightsAgreement);
      codeNode.textContent = [...state.loadLines, ...code.runCode(state.attnPrefix, t.ids, module.config.d_in, module.config.num_heads, module.config)].join("\n");
      section.dataset.runs = String(state.runs);
    } catch (err) {
      if (seq === state.runSeq) {
        replace(stageNav);
        replace(stageCards);
        traceStatus.textContent = "";
        replace(runError, errorBox(S.ckptRunError, interrupted(err), { testid: "ckpt-run-diag", showCode: true }));
      }
    } finally {
      runButton.disabled = false;
    }
  }

  /** Whether the traced layer is the whole model's block (its attention weights on the same tokens), or how to see it. */
  function showAgreement(trace, ids, weightsAgreement) {
    const first = gpt2?.weightsFor(state.layer, ids);
    const a = first ? weightsAgreement(trace, first) : null;
    agreement.dataset.agree = a ? String(a.maxDiff <= 1e-5) : "";
    agreement.className = a ? (a.maxDiff <= 1e-5 ? "verdict agree" : "verdict disagree") : "muted";
    agreement.textContent = a ? S.ckptAgreement(state.layer, a) : S.ckptAgreementHow(state.layer);
  }

  function refresh() {
    const mha = app.state.className === targetClass && app.derived.description?.ok;
    const current = body.querySelector("#ckpt-target-current");
    current.disabled = !mha;
    if (!mha && current.checked) body.querySelector("#ckpt-target-new").checked = true;
    targetNote.textContent = mha ? S.ckptTargetNote(app.derived.description.pythonCall) : S.ckptTargetNeedsMha;
  }

  return { render: refresh };
}

/** Work the worker dropped when the widget left the page says so (and what to do) instead of "cancelled". */
function interrupted(err) {
  return err?.code === "cancelled" ? { code: "cancelled", message: S.ckptInterrupted, hint: "" } : err;
}
