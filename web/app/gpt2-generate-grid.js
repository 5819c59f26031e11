// The Generate part's attention grid: for one new token (the newest while the generation runs, or one
// the reader picks), the attn_weights row of the position that produced it, in every layer x head, as a
// thin heatmap of the keys it sees (model.generate({attention: true}) gives each step's rows as
// (n_layer, n_head, keys)). The table is built once per generation; a new token or a pick redraws each
// cell's canvas in place and changes nothing else.
import { h, replace } from "./dom.js";
import { S } from "./strings-gpt2.js";
import { color } from "./slice-view.js";

/** A grid that `show`s one step at a time. */
export function attentionGrid({ onFollow }) {
  const caption = h("p", { class: "muted", dataset: { testid: "gen-grid-caption" } });
  const follow = h("button", { type: "button", class: "small", part: "button", hidden: true, dataset: { testid: "gen-follow" }, on: { click: () => onFollow() } }, S.genFollow);
  const holder = h("div");  // holds a fresh .table-scroll per table (scroll-cue.js adds its cue to that box)
  const node = h("div", { class: "gen-grid", hidden: true, dataset: { testid: "gen-grid" } }, h("h5", {}, S.genGridTitle), caption, follow, holder);
  /** cells[layer][head]: {td, canvas, label}; built for one (n_layer, n_head). */
  let cells = null;
  let built = "";

  function build(L, H) {
    cells = Array.from({ length: L }, () => Array.from({ length: H }, () => {
      const canvas = h("canvas", { class: "gen-row", height: "1", "aria-hidden": "true" });
      const label = h("span", { class: "sr-only" });
      return { td: h("td", { dataset: { testid: "gen-cell" } }, canvas, label), canvas, label };
    }));
    replace(holder, h("div", { class: "table-scroll" }, h("table", { class: "gpt2-patterns gen-patterns", dataset: { testid: "gen-grid-table" } },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, S.gpt2LayerHead), Array.from({ length: H }, (_, head) => h("th", { scope: "col" }, String(head))))),
      h("tbody", {}, cells.map((row, layer) => h("tr", {}, h("th", { scope: "row" }, String(layer)), row.map((c) => c.td)))))));
    built = `${L}x${H}`;
  }

  /**
   * Draws step `index` (0-based among the new tokens): `step.attention` {shape: [L, H, T], data}, one
   * pixel per key (the row fills its cell whatever T is); `keyLabel(j)` names key j of the T;
   * `tokenLabel` the new token; `pinned` whether the reader picked it (else it follows the newest).
   */
  function show(step, index, { keyLabel, tokenLabel, pinned }) {
    if (!step?.attention) return;
    const [L, H, T] = step.attention.shape;
    const data = step.attention.data;
    if (built !== `${L}x${H}`) build(L, H);
    node.hidden = false;
    follow.hidden = !pinned;
    const W = T;
    for (let layer = 0; layer < L; layer++) {
      for (let head = 0; head < H; head++) {
        const { td, canvas, label } = cells[layer][head];
        const row = data.subarray((layer * H + head) * T, (layer * H + head + 1) * T);
        let top = 0;
        for (let j = 1; j < T; j++) if (row[j] > row[top]) top = j;
        // each row on its own scale (its largest weight darkest): with many keys the weights are small
        const scale = row[top] > 0 ? 1 / row[top] : 1;
        if (canvas.width !== W) canvas.width = W;
        const g = canvas.getContext("2d");
        const img = g.createImageData(W, 1);
        for (let j = 0; j < W; j++) {
          const rgb = color(row[j] * scale);
          img.data.set([rgb[0], rgb[1], rgb[2], 255], 4 * j);
        }
        g.putImageData(img, 0, 0);
        const text = S.genCellTitle(layer, head, keyLabel(top), row[top]);
        td.title = text;
        label.textContent = text;
        td.dataset.key = String(top);
        td.dataset.weight = row[top].toFixed(6);
      }
    }
    caption.textContent = S.genGridCaption(index + 1, tokenLabel, keyLabel(T - 1), T);
    node.dataset.step = String(index + 1);
    node.dataset.keys = String(T);
  }

  return {
    node,
    show,
    reset() {
      cells = null;
      built = "";
      replace(holder);
      node.hidden = true;
      delete node.dataset.step;
    },
  };
}
