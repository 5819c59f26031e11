// Downloads of a stage (JSON, CSV, NumPy .npy) and of a heatmap (PNG, SVG). Everything is built in
// the page and handed to the browser as a Blob: nothing is sent anywhere.
import { f32Text } from "./format.js";

/** The stage as JSON: {id, title, formula, axes, shape, data} with data nested by axis; −inf as "-inf". */
export function stageJson(stage) {
  const value = (v) => (Number.isFinite(v) ? Number(f32Text(v)) : f32Text(v));
  const nest = (axis, offset) => {
    const n = stage.shape[axis];
    const stride = stage.shape.slice(axis + 1).reduce((a, b) => a * b, 1);
    const out = [];
    for (let i = 0; i < n; i++) out.push(axis === stage.shape.length - 1 ? value(stage.data[offset + i]) : nest(axis + 1, offset + i * stride));
    return out;
  };
  const body = { id: stage.id, title: stage.title, formula: stage.formula, axes: stage.axes, shape: stage.shape, dtype: "float32", data: stage.shape.length ? nest(0, 0) : value(stage.data[0]) };
  return new Blob([JSON.stringify(body)], { type: "application/json" });
}

/**
 * The stage as CSV: one line per row of the last axis; the leading axes are index columns named
 * after their axes, then one column per index of the last axis ("key=0", ...). −inf is written -inf.
 */
export function stageCsv(stage) {
  const { shape, axes, data } = stage;
  const nd = shape.length;
  const cols = nd ? shape[nd - 1] : 1;
  const lead = shape.slice(0, -1);
  const last = axes[nd - 1] || "col";
  const lines = [[...axes.slice(0, -1), ...Array.from({ length: cols }, (_, j) => `${last}=${j}`)].join(",")];
  const rows = data.length / cols;
  const index = new Array(lead.length).fill(0);
  for (let r = 0; r < rows; r++) {
    const cells = [];
    for (let j = 0; j < cols; j++) cells.push(f32Text(data[r * cols + j]));
    lines.push([...index, ...cells].join(","));
    for (let a = lead.length - 1; a >= 0; a--) {
      if (++index[a] < lead[a]) break;
      index[a] = 0;
    }
  }
  return new Blob([lines.join("\n") + "\n"], { type: "text/csv" });
}

/** The stage as a NumPy .npy file (format 1.0): little-endian float32, C order, the stage's shape. */
export function stageNpy(stage) {
  const shape = stage.shape.length === 1 ? `(${stage.shape[0]},)` : `(${stage.shape.join(", ")})`;
  let header = `{'descr': '<f4', 'fortran_order': False, 'shape': ${shape}, }`;
  // magic (6) + version (2) + header length (2) + header, padded with spaces and ending in \n to a multiple of 64.
  const unpadded = 10 + header.length + 1;
  header += " ".repeat((64 - (unpadded % 64)) % 64) + "\n";
  const bytes = new Uint8Array(10 + header.length + stage.data.length * 4);
  bytes.set([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0], 0); // \x93NUMPY v1.0
  new DataView(bytes.buffer).setUint16(8, header.length, true);
  for (let i = 0; i < header.length; i++) bytes[10 + i] = header.charCodeAt(i);
  const view = new DataView(bytes.buffer, 10 + header.length);
  for (let i = 0; i < stage.data.length; i++) view.setFloat32(i * 4, stage.data[i], true);
  return new Blob([bytes], { type: "application/octet-stream" });
}

/** Hands a Blob to the browser as a download named `filename`. */
export function download(parent, blob, filename) {
  const url = URL.createObjectURL(blob);
  const a = document.createElement("a");
  a.href = url;
  a.download = filename;
  a.hidden = true;
  parent.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/**
 * A heatmap as SVG text: one rect per cell (with its value as a <title>) up to 96 x 96 cells, an
 * embedded PNG above that. `cell(r, c)` gives [value, rgb].
 */
export function heatmapSvg(rows, cols, cell, title, pngDataUrl) {
  const size = rows * cols <= 96 * 96 ? 16 : 1;
  const w = cols * size;
  const hgt = rows * size;
  const esc = (t) => String(t).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${hgt}" viewBox="0 0 ${w} ${hgt}">`, `<title>${esc(title)}</title>`];
  if (size === 16) {
    for (let r = 0; r < rows; r++) {
      for (let c = 0; c < cols; c++) {
        const [v, rgb] = cell(r, c);
        parts.push(`<rect x="${c * size}" y="${r * size}" width="${size}" height="${size}" fill="rgb(${rgb.join(",")})"><title>${esc(`[${r}, ${c}] ${f32Text(v)}`)}</title></rect>`);
      }
    }
  } else {
    parts.push(`<image width="${w}" height="${hgt}" href="${pngDataUrl}" style="image-rendering: pixelated"/>`);
  }
  parts.push("</svg>");
  return new Blob([parts.join("\n")], { type: "image/svg+xml" });
}

/** A (rows, cols) canvas of one pixel per cell; rgbAt(r, c) gives its [r, g, b] (the GPT-2 grid draws these too). */
export function pixelCanvas(rows, cols, rgbAt) {
  const canvas = document.createElement("canvas");
  canvas.width = cols;
  canvas.height = rows;
  const g = canvas.getContext("2d");
  const img = g.createImageData(cols, rows);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const rgb = rgbAt(r, c);
      const i = (r * cols + c) * 4;
      img.data[i] = rgb[0];
      img.data[i + 1] = rgb[1];
      img.data[i + 2] = rgb[2];
      img.data[i + 3] = 255;
    }
  }
  g.putImageData(img, 0, 0);
  return canvas;
}

/** A heatmap as a PNG: each cell a square of pixels (16 px up to 64 cells a side, 1 px above). */
export function heatmapCanvas(rows, cols, cell) {
  const size = Math.max(1, Math.min(16, Math.floor(1024 / Math.max(rows, cols))));
  const small = pixelCanvas(rows, cols, (r, c) => cell(r, c)[1]);
  if (size === 1) return small;
  const canvas = document.createElement("canvas");
  canvas.width = cols * size;
  canvas.height = rows * size;
  const g = canvas.getContext("2d");
  g.imageSmoothingEnabled = false;
  g.drawImage(small, 0, 0, canvas.width, canvas.height);
  return canvas;
}

export function canvasBlob(canvas) {
  return new Promise((resolve) => canvas.toBlob(resolve, "image/png"));
}
