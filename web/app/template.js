// The widget's markup, built with DOM calls (no HTML parsing): one panel per step of the lesson.
// Every panel carries data-panel (the names `hidden="..."` accepts) and part="panel <name>".
import { h } from "./dom.js";
import { S } from "./strings.js";
import { MAX_BATCH } from "./url-state.js";
import { predictExample } from "./format.js";

/** Panel names a host page may hide with hidden="...". */
export const PANELS = ["presets", "setup", "facts", "tokens", "predict", "trace", "compare", "checkpoint", "code"];

const tid = (testid, extra = {}) => ({ ...extra, testid });

/** @param name  a name that tells this widget from others on the page ("" when it is the only one) */
export function buildSkeleton(name = "") {
  return h("div", { class: "lab", part: "lab", role: "region", "aria-label": name ? `${S.widgetLabel} (${name})` : S.widgetLabel },
    h("span", { id: "lab-name", hidden: true }, name ? `(${name})` : ""),
    h("p", { id: "status", class: "status", role: "status", "aria-live": "polite", dataset: tid("status") }),
    h("p", { id: "url-notice", class: "status", role: "note", hidden: true, dataset: tid("url-notice") }, S.urlStateTaken),

    h("nav", { class: "presets", id: "presets", "aria-labelledby": "presets-heading lab-name", dataset: { panel: "presets" }, part: "panel presets" },
      h("h2", { id: "presets-heading", class: "inline-heading" }, S.presetsHeading),
      h("div", { id: "preset-buttons", class: "preset-buttons" }),
      h("p", { id: "preset-note", class: "preset-note", role: "note", hidden: true, dataset: tid("preset-note") }),
      h("p", { id: "presets-hint", class: "muted" }, S.presetsHint)),

    h("div", { class: "setup-grid" },
      h("section", { id: "setup", class: "panel", "aria-labelledby": "setup-heading lab-name", dataset: { panel: "setup" }, part: "panel setup" },
        h("h2", { id: "setup-heading" }, S.setupHeading),
        h("div", { class: "field" },
          h("label", { for: "class-select" }, S.classLabel),
          h("select", { id: "class-select", dataset: tid("class-select"), part: "input" })),
        h("div", { class: "field" },
          h("label", { for: "call-box" }, S.callLabel),
          h("textarea", {
            id: "call-box", rows: "2", spellcheck: "false", autocomplete: "off", autocapitalize: "off",
            "aria-describedby": "lock-notice call-hint call-diagnostics", dataset: tid("call-box"), part: "input call-box",
          }),
          h("p", { id: "lock-notice", class: "lock-notice", role: "status", hidden: true, dataset: tid("lock-notice") }),
          h("p", { id: "call-hint", class: "muted" }, S.callHint),
          h("p", { class: "keyword-form" }, h("span", { class: "muted" }, `${S.keywordForm}: `), h("code", { id: "keyword-call", dataset: tid("keyword-call") })),
          h("div", { id: "call-diagnostics", class: "diagnostics", "aria-live": "polite", dataset: tid("call-diagnostics") })),
        h("div", { class: "named" },
          h("h3", { id: "named-heading" }, S.namedHeading),
          h("ol", { id: "named-values", class: "named-values", "aria-labelledby": "named-heading lab-name", dataset: tid("named-values") })),
        h("fieldset", { class: "slots" },
          h("legend", {}, S.slotsHeading),
          h("div", { id: "slot-fields", class: "slot-fields" }))),

      h("section", { id: "facts", class: "panel", "aria-labelledby": "facts-heading lab-name", dataset: { ...tid("facts"), panel: "facts" }, part: "panel facts" },
        h("h2", { id: "facts-heading" }, S.factsHeading),
        h("dl", { class: "facts-list" },
          fact(S.headDim, h("span", {}, h("span", { id: "fact-headdim", class: "fact-big", dataset: tid("head-dim") }), " ", h("span", { class: "muted" }, S.headDimNote))),
          fact(S.outputWidth, h("span", { id: "fact-width", class: "fact-big", dataset: tid("output-width") })),
          fact(S.outputWidthRule, h("code", { id: "fact-rule", dataset: tid("output-width-rule") })),
          fact(S.maskSize, h("span", { id: "fact-mask", dataset: tid("mask-bytes") })),
          fact(S.kvCacheLabel, h("span", { id: "fact-kv", dataset: tid("kv-cache") })),
          fact(S.runMemory, h("span", { id: "fact-memory", dataset: tid("run-memory") }))),
        h("p", { id: "facts-unavailable", class: "muted", hidden: true }, S.factsUnavailable),
        h("div", { class: "table-scroll", tabindex: "0", role: "region", "aria-labelledby": "params-caption lab-name" },
          h("table", { id: "params-table", class: "params", dataset: tid("params-table") },
            h("caption", { id: "params-caption" }, S.paramsCaption),
            h("thead", {}, h("tr", {},
              h("th", { scope: "col" }, S.paramName), h("th", { scope: "col" }, S.paramShape), h("th", { scope: "col", class: "num" }, S.paramCount))),
            h("tbody", { id: "params-body" }),
            h("tfoot", {}, h("tr", {},
              h("th", { scope: "row", colspan: "2" }, S.paramTotal), h("td", { class: "num", id: "param-total", dataset: tid("param-total") }))))))),

    h("section", { id: "tokens", class: "panel", "aria-labelledby": "tokens-heading lab-name", dataset: { panel: "tokens" }, part: "panel tokens" },
      h("h2", { id: "tokens-heading" }, S.tokensHeading),
      h("div", { class: "tokens-grid" },
        h("fieldset", { class: "radio-group tokens-source" },
          h("legend", {}, S.sourceLegend),
          radio("source", "book", S.sourceBook),
          radio("source", "sentence", S.sourceSentence),
          radio("source", "random", S.sourceRandom),
          radio("source", "custom", S.sourceCustom)),
        h("div", { class: "tokens-text" },
          h("div", { class: "field" },
            h("label", { for: "sentence" }, S.sentenceLabel),
            h("input", { type: "text", id: "sentence", autocomplete: "off", spellcheck: "false", "aria-describedby": "word-count", dataset: tid("sentence"), part: "input" }),
            h("p", { id: "word-count", class: "muted" })),
          h("div", { class: "field count-field" },
            h("label", { for: "count" }, S.countLabel),
            h("div", { class: "count-row" },
              h("input", { type: "text", id: "count", inputmode: "numeric", autocomplete: "off", "aria-describedby": "count-hint", dataset: tid("count"), part: "input" }),
              h("button", { type: "button", id: "fill-context", class: "small", dataset: tid("fill-context"), part: "button" })),
            h("p", { id: "count-hint", class: "muted" }))),
        h("div", { class: "tokens-opts" },
          h("div", { class: "field" },
            h("label", { for: "batch" }, S.batchLabel),
            h("select", { id: "batch", "aria-describedby": "batch-note", dataset: tid("batch"), part: "input" },
              Array.from({ length: MAX_BATCH }, (_, i) => h("option", { value: String(i + 1) }, S.batchOption(i + 1)))),
            h("p", { id: "batch-note", class: "muted" })),
          h("div", { class: "field" },
            h("label", { for: "seed" }, S.seedLabel),
            h("input", { type: "text", id: "seed", inputmode: "numeric", autocomplete: "off", "aria-describedby": "seed-error seed-note", dataset: tid("seed"), part: "input" }),
            h("p", { id: "seed-error", class: "field-error", hidden: true }),  // its text: the core's range (tokens panel)
            h("p", { id: "seed-note", class: "muted" }, S.seedNote))),
        h("fieldset", { class: "radio-group tokens-mode" },
          h("legend", {}, S.modeLegend),
          radio("mode", "train", S.modeTrain),
          radio("mode", "eval", S.modeEval))),
      h("p", { class: "note" }, S.dropoutNote),
      h("details", { id: "grid-details", class: "grid-details", dataset: tid("grid-details") },
        h("summary", {}, S.gridHeading),
        h("div", { id: "embedding-grid", class: "embedding-grid" })),
      h("div", { id: "token-diagnostics", class: "diagnostics", "aria-live": "polite", dataset: tid("token-diagnostics") })),

    h("section", { id: "predict", class: "panel", "aria-labelledby": "predict-heading lab-name", dataset: { panel: "predict" }, part: "panel predict" },
      h("h2", { id: "predict-heading" }, S.predictHeading),
      h("div", { class: "predict-row" },
        h("div", { class: "field" },
          h("label", { for: "prediction", id: "prediction-label" }, S.predictLabel(predictExample(null).shape)),
          h("input", { type: "text", id: "prediction", autocomplete: "off", spellcheck: "false", "aria-describedby": "predict-hint predict-error", dataset: tid("prediction"), part: "input" }),
          h("p", { id: "predict-hint", class: "muted" }, S.predictHint),
          h("p", { id: "predict-error", class: "field-error", hidden: true }, S.predictBad(predictExample(null).shape, predictExample(null).width))),
        h("label", { class: "check-label" }, h("input", { type: "checkbox", id: "quiz", dataset: tid("quiz") }), " ", S.quizLabel))),

    h("div", { class: "run-panel panel", dataset: { panel: "run" }, part: "panel run" },
      h("div", { class: "run-row" },
        h("button", { type: "button", id: "run", class: "primary", "aria-describedby": "run-reason", disabled: true, dataset: tid("run"), part: "button run-button" }, S.runButton),
        h("p", { id: "run-reason", class: "run-reason", "aria-live": "polite", dataset: tid("run-reason") }, S.runBlocked(S.reasonLoading))),
      h("div", { id: "progress", class: "progress", hidden: true, dataset: tid("progress") },
        h("progress", { id: "progress-bar", "aria-labelledby": "progress-text" }),
        h("span", { id: "progress-text", role: "status" }),
        h("button", { type: "button", id: "cancel", class: "small", dataset: tid("cancel"), part: "button" }, S.cancel)),
      h("div", { id: "prediction-verdict", class: "verdict-box", "aria-live": "polite", dataset: tid("prediction-verdict") }),
      h("div", { id: "run-error", class: "diagnostics", "aria-live": "assertive", dataset: tid("run-error") })),

    h("section", { id: "trace", class: "panel", "aria-labelledby": "trace-heading lab-name", dataset: { panel: "trace" }, part: "panel trace" },
      h("h2", { id: "trace-heading" }, S.traceHeading),
      h("div", { id: "stale-banner", class: "stale-banner", role: "status", hidden: true, dataset: tid("stale-banner") },
        h("p", { id: "stale-text" }),
        h("button", { type: "button", id: "stale-run", class: "primary small", dataset: tid("stale-run"), part: "button run-button" }, S.staleRun)),
      h("p", { id: "trace-status", class: "trace-status", dataset: tid("trace-status") }, S.traceEmpty),
      h("nav", { id: "stage-nav", class: "stage-nav", "aria-label": name ? `${S.stagesNav} (${name})` : S.stagesNav }),
      h("div", { id: "stage-cards", class: "stage-cards", dataset: tid("stage-cards") })),

    h("section", { id: "compare", class: "panel", "aria-labelledby": "compare-heading lab-name", dataset: { panel: "compare", testid: "compare-panel" }, part: "panel compare" },
      h("h2", { id: "compare-heading" }, S.compareHeading),
      h("fieldset", { class: "radio-group compare-mode" },
        h("legend", {}, S.compareLegend),
        radio("compare-mode", "convert", S.compareConvert),
        radio("compare-mode", "copy", S.compareCopy),
        radio("compare-mode", "ways", S.compareWays),
        radio("compare-mode", "cache", S.compareCache),
        radio("compare-mode", "check", S.compareCheck)),
      h("div", { id: "compare-body", class: "compare-body" })),

    h("section", { id: "checkpoint", class: "panel", "aria-labelledby": "checkpoint-heading lab-name", dataset: { panel: "checkpoint", testid: "checkpoint-panel" }, part: "panel checkpoint" },
      h("h2", { id: "checkpoint-heading" }, S.ckptHeading),
      h("p", { class: "muted ckpt-intro" }, S.ckptIntro),
      h("div", { id: "checkpoint-body", class: "checkpoint-body" })),

    h("section", { id: "code", class: "panel", "aria-labelledby": "code-heading lab-name", dataset: { panel: "code" }, part: "panel code" },
      h("h2", { id: "code-heading" }, S.codeHeading),
      h("p", { class: "muted" }, S.codeIntro),
      h("pre", { class: "code", tabindex: "0", "aria-labelledby": "code-heading lab-name" }, h("code", { id: "code-view", dataset: tid("code-view") })),
      h("div", { class: "code-actions" },
        h("button", { type: "button", id: "code-copy", dataset: tid("code-copy"), part: "button" }, S.codeCopy),
        h("span", { id: "code-copy-status", class: "muted", role: "status" }))));
}

function fact(label, value) {
  return h("div", { class: "fact" }, h("dt", {}, label), h("dd", {}, value));
}

function radio(name, value, text) {
  const id = `${name}-${value}`;
  return h("label", { for: id }, h("input", { type: "radio", name, value, id, dataset: tid(id) }), " ", h("span", {}, text));
}
