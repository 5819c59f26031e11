// The code panel: the PyTorch lines that reproduce what the widget shows (python-code.js writes them),
// plus the lines other panels add (the comparison on screen), and a copy button.
import { S } from "./strings.js";
import { copyText } from "./dom.js";
import { pythonCode } from "./python-code.js";
import { gridTexts, seedValue, singleSequence } from "./lab-model.js";

export function setupCodePanel(app) {
  const { lab, $ } = app;
  $("code-copy").addEventListener("click", copyCode);

  function copyCode() {
    return copyText($("code-view").textContent, $("code-view"), $("code-copy-status"), S.codeCopied, S.codeCopyFailed);
  }

  return {
    render(d) {
      const s = app.state;
      const desc = d.description;
      let text = S.codeNoRun;
      if (desc.ok && !d.blocked) {
        let tokens = null;
        if (s.source === "custom") tokens = s.custom.texts;
        else if (s.source === "book") tokens = gridTexts(app.tokensFor(desc.config.d_in));
        text = pythonCode({
          className: s.className, book: desc.class.book, pythonName: desc.class.pythonName, pythonCall: desc.pythonCall, config: desc.config, seed: seedValue(lab, s), source: s.source,
          words: d.words, tokens, sentenceTokens: typeof lab.sentenceTokens === "function",
          batch: singleSequence(lab, s.className) ? 0 : s.batch, training: s.training,
          outputShape: d.shape ? [...d.shape.slice(0, -1), desc.outputWidth] : null,
          extra: app.contributedCode(),
        });
      }
      $("code-view").textContent = text;
    },
  };
}
