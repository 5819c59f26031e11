// The PyTorch a reader pastes into the notebook to confirm what "Check your own module" found: the
// book's module made from the check file, its output beside the reader's, and, for the catalogue cause
// that explains the reader's output, the line to change and the comparison that turns True once the
// line is the book's. Pure text, no DOM; every fact comes from the check's report and the core's class
// facts (lab.classes' `book`).
import { bookHome } from "./python-code.js";

/** `[1, 3, 0:4]`: the row of the report's difference, as Python indexes it. */
function rowIndex(d) {
  const end = d.from + d.yours.length;
  return `[${[...d.index.slice(0, -1), `${d.from}:${end}`].join(", ")}]`;
}

/** A Python string literal of a file name (double quotes, backslashes and quotes escaped). */
function pyPath(name) {
  return `"${String(name).replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

/**
 * The lines that confirm the verdict in PyTorch.
 * @param o {report (lab.checkModule's), book (the class's {chapter, folder, file, section}, or null), fileName}
 * @returns {string} Python: load the file, run the book's module on its x, print both outputs (or their
 *   largest difference), and for an explaining cause the line to change and the check that then passes.
 */
export function confirmCode({ report, book, fileName = "check.pt" }) {
  const L = ["import torch"];
  if (book) L.push(`# ${report.className}: ${bookHome(book)}.`);
  L.push(
    `ck = torch.load(${pyPath(fileName)})`,
    'weights = {k: v for k, v in ck["state_dict"].items() if k.split(".")[-1] != "mask"}  # the mask buffer: the class makes its own',
    `book = ${report.call}`,
    "book.load_state_dict(weights, strict=False)",
    "book.eval()",
    "with torch.no_grad():",
    '    book_output = book(ck["x"])',
    `print((book_output - ck["output"]).abs().max())  # the largest difference${report.agree ? "" : ", as the page found it"}`,
  );
  const d = report.difference;
  if (d?.stage === "output") L.push(`print(ck["output"]${rowIndex(d)})  # yours, where it first differs`, `print(book_output${rowIndex(d)})  # the book's`);
  const cause = report.causes.find((c) => c.explains);
  if (!cause) return L.join("\n");
  L.push(
    "",
    "# Your output is what this line gives. In your class's forward, change",
    `#     ${cause.line}`,
    "# to the book's",
    `#     ${cause.fix}`,
    "# then make your module `mha` again and give it the same weights:",
    'mha.load_state_dict(weights, strict=False)',
    "mha.eval()",
    "with torch.no_grad():",
    '    print(torch.allclose(mha(ck["x"]), book_output, rtol=1e-5, atol=1e-5))  # True: your module now computes the book\'s',
  );
  return L.join("\n");
}
