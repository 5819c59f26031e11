// The predict panel: the reader writes the output shape they expect before running; after the run the
// verdict says whether it held and, when not, which rule they missed (the class's head kind is the
// core's fact). Quiz mode hides the output width until the next run.
import { h, replace } from "./dom.js";
import { S } from "./strings.js";
import { predictExample, shapeText } from "./format.js";
import { setInvalid, setValue } from "./diagnostic-view.js";

export function setupPredictPanel(app) {
  const { $ } = app;
  $("prediction").addEventListener("input", (e) => app.setState({ prediction: e.target.value }));
  $("quiz").addEventListener("change", (e) => {
    // hidden until the next run
    app.setState({ quiz: e.target.checked, quizFrom: Number(app.host.dataset.runs ?? 0) });
  });

  function verdict(run, parsed) {
    const shape = run.outputShape;
    const held = parsed.length === 1 ? parsed[0] === shape[shape.length - 1] : parsed.length === shape.length && parsed.every((v, i) => v === shape[i]);
    const why = [S.predictWhyWidth(run.rule)];
    const width = parsed[parsed.length - 1];
    const cfg = run.config;
    if (!held) {
      // which mix-up the guess shows, from the numbers the core gave (the output width, head_dim)
      const out = shape[shape.length - 1];
      if (cfg.num_heads > 1 && width === cfg.d_out && out === cfg.num_heads * cfg.d_out) why.push(S.predictWhyPerHead);
      else if (cfg.num_heads > 1 && width === run.headDim && out === cfg.d_out && run.headDim !== cfg.d_out) why.push(S.predictWhyHeadDim);
      else if (cfg.num_heads > 1 && width === cfg.d_out * cfg.num_heads && out === cfg.d_out) why.push(S.predictWhyShared);
      if (parsed.length > 1) {
        if (shape.length === 3 && parsed[0] !== shape[0]) why.push(S.predictWhyBatch(shape[0]));
        if (shape.length === 2 && parsed.length === 3) why.push(S.predictWhyNoBatch);
        const tokenAxis = shape.length - 2;
        if (parsed.length === shape.length && parsed[tokenAxis] !== shape[tokenAxis]) why.push(S.predictWhyTokens(shape[tokenAxis]));
      }
    }
    const predText = parsed.length === 1 ? String(parsed[0]) : shapeText(parsed);
    return h("div", { class: `verdict ${held ? "agree" : "disagree"}`, dataset: { testid: "prediction-result", held: String(held) } },
      h("p", {}, held ? S.predictHeld(shapeText(shape)) : S.predictMissed(predText, shapeText(shape))),
      why.map((w) => h("p", { class: "verdict-why" }, w)));
  }

  return {
    render(d) {
      const s = app.state;
      const width = d.description?.ok ? d.description.outputWidth : null;
      const example = predictExample(d.shape && width != null ? [...d.shape.slice(0, -1), width] : null);
      $("prediction-label").textContent = S.predictLabel(example.shape);
      $("predict-error").textContent = S.predictBad(example.shape, example.width);
      setValue($("prediction"), s.prediction);
      $("quiz").checked = s.quiz;
      const text = s.prediction.trim();
      const parsed = parsePrediction(text);
      $("predict-error").hidden = !text || parsed !== null;
      setInvalid($("prediction"), Boolean(text) && parsed === null);
      if (!s.lastRun || !parsed || !d.revealed) replace($("prediction-verdict"));
      else replace($("prediction-verdict"), verdict(s.lastRun, parsed));
    },
  };
}

/** "(2, 6, 2)", "2, 6, 2", "[2,6,2]", "torch.Size([2, 6, 2])" or "2" -> [2, 6, 2] / [2]; null when unreadable. */
export function parsePrediction(text) {
  const t = text.trim().replace(/^torch\.Size\s*/, "");
  if (!t) return null;
  const inner = t.replace(/^[([]+/, "").replace(/[)\]]+$/, "").trim();
  const parts = inner.split(",").map((p) => p.trim()).filter((p, i, all) => p !== "" || i < all.length - 1);
  if (!parts.length || parts.length > 4 || parts.some((p) => !/^\d{1,7}$/.test(p))) return null;
  return parts.map(Number);
}
