// layout="compact": the lab as course material, one exercise among the page's own text. One column (two
// where the widget is wide: the setup and the run beside the trace, so that an exercise fits a slide);
// the step headings without their numbers (a course page with several widgets would repeat "1." to
// "5."); the tokens and the facts collapsed to one line each (the facts open when the reader asks, and
// the output width stays hidden until the reader's run, as in quiz mode); the trace's stages collapsed
// to their cards' headings, one open at a time (the output after a run). Read once when the widget starts.
import { h } from "./dom.js";
import { S } from "./strings.js";
import { singleSequence } from "./lab-model.js";

/** The state a compact widget starts from: predict first (quiz), so nothing shows the output width yet. */
export const COMPACT_START = Object.freeze({ quiz: true, quizFrom: 0 });

/**
 * Turns a heading into the button that opens and closes its box (the heading keeps its level and its
 * text, for the landmark names). Returns the button.
 */
function disclosure(heading, testid, onToggle) {
  const button = h("button", { type: "button", class: "disclosure", "aria-expanded": "false", dataset: { testid }, part: "button disclosure" }, ...heading.childNodes);
  button.addEventListener("click", () => onToggle(button.getAttribute("aria-expanded") !== "true"));
  heading.append(button);
  return button;
}

function setOpen(box, button, open) {
  box.classList.toggle("collapsed", !open);
  button.setAttribute("aria-expanded", String(open));
}

/**
 * The setup, the tokens, predict and run in one column, the trace in another: the two sit side by side
 * where the widget is wide enough (style.css: a 1280 x 720 slide, a desktop page), one above the other
 * where it is not. Predict stays just above run (they read as one step).
 */
function splitColumns(root) {
  const main = h("div", { class: "compact-main" });
  const side = h("div", { class: "compact-side" });
  const grid = root.querySelector(".setup-grid");
  grid.before(h("div", { class: "compact-cols" }, main, side));
  main.append(grid, ...["#tokens", "#predict", ".run-panel"].map((sel) => root.querySelector(sel)));
  side.append(root.querySelector("#trace"));
}

export function setupCompactLayout(app) {
  const { root, $, lab } = app;
  root.querySelector(".lab").classList.add("compact");
  splitColumns(root);
  for (const heading of root.querySelectorAll(".panel > h2")) heading.textContent = heading.textContent.replace(/^\d+\.\s*/, "");

  // The facts: one line until the reader asks (asking also shows the output width: no quiz any more).
  const facts = $("facts");
  const factsButton = disclosure($("facts-heading"), "facts-toggle", (open) => {
    setOpen(facts, factsButton, open);
    if (open && app.state.quiz) app.setState({ quiz: false });
  });
  facts.append(h("p", { class: "compact-summary muted", dataset: { testid: "facts-summary" } }, S.compactFactsSummary));
  setOpen(facts, factsButton, false);

  // The tokens: one line saying what runs; open to change them (an error in them opens the box).
  const tokens = $("tokens");
  const tokensButton = disclosure($("tokens-heading"), "tokens-toggle", (open) => setOpen(tokens, tokensButton, open));
  const tokensLine = h("p", { class: "compact-summary muted", dataset: { testid: "tokens-summary" } });
  tokens.append(tokensLine);
  setOpen(tokens, tokensButton, false);

  // The trace's stages: each card shows its heading and shape; one opens at a time.
  const cards = $("stage-cards");
  let collapsedSeq = null;
  function openCard(card) {
    for (const c of cards.querySelectorAll(":scope > .stage-card")) {
      const open = c === card;
      c.classList.toggle("collapsed", !open);
      c.classList.toggle("open", open);
      c.querySelector(".stage-toggle")?.setAttribute("aria-expanded", String(open));
    }
  }
  function collapseCards() {
    for (const card of cards.querySelectorAll(":scope > .stage-card")) {
      const title = card.querySelector(".stage-head h3");
      if (!title || title.querySelector(".stage-toggle")) continue;
      // collapsed, a card shows its stage id (its title stays the button's name, for screen readers)
      const [id, ...rest] = title.childNodes;
      const button = h("button", { type: "button", class: "disclosure stage-toggle", "aria-expanded": "false", dataset: { testid: "stage-toggle" }, part: "button disclosure" },
        id, h("span", { class: "stage-title" }, ...rest));
      button.addEventListener("click", () => openCard(button.getAttribute("aria-expanded") === "true" ? null : card));
      title.append(button);
    }
    openCard(cards.querySelector(":scope > [data-stage=output]"));
  }

  return {
    render(d) {
      const s = app.state;
      root.querySelector(".lab").classList.toggle("concealed", d.hide);
      const source = s.source === "book" ? S.tokensBook(S.bookSentence)
        : s.source === "sentence" ? S.tokensSentence(s.tokens.trim())
          : s.source === "random" ? S.tokensRandom(s.count) : S.tokensCustom(s.custom?.rows ?? 0);
      tokensLine.textContent = S.compactTokens(source, singleSequence(lab, s.className) ? null : s.batch, s.seed, s.training);
      if (d.tokens.problems.some((p) => p.severity === "error") && tokens.classList.contains("collapsed")) setOpen(tokens, tokensButton, true);
      if (s.lastRun && s.lastRun.seq !== collapsedSeq) {
        collapsedSeq = s.lastRun.seq;
        collapseCards();
      }
    },
  };
}
