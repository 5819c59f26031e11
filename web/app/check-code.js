// The PyTorch a reader pastes into the notebook to confirm what "Check your own module" found: the
// book's module made from the check file, its output beside the reader's, and, for the catalogue cause
// that explains the reader's output, the line to change and the comparison that turns True once the
// line is the book's. Pure text, no DOM; every fact comes from the check's report and the core's class
// facts (lab.classFacts' `book`).
import { bookHome } from "./python-code.js";

/**
 * The book folders whose classes the book's own package ships (`pip install llms-from-scratch`), by the
 * package's module: the reader imports the book's class from there instead of pasting its code.
 */
const PACKAGE = { "ch03/01_main-chapter-code": "llms_from_scratch.ch03" };

/** `[1, 3, 0:4]`: the row of the report's difference, as Python indexes it. */
function rowIndex(d) {
  const end = d.from + d.yours.length;
  return `[${[...d.index.slice(0, -1), `${d.from}:${end}`].join(", ")}]`;
}

/** A Python string literal of a file name (double quotes, backslashes and quotes escaped). */
function pyPath(name) {
  return `"${String(name).replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

/** The lines that bring the book's class in as Book<Name>, so that it does not shadow the reader's own class of the same name. */
function bookClassLines(report, book, name) {
  const module = book && PACKAGE[book.folder];
  const where = book ? `${report.className}: ${bookHome(book)}` : report.className;
  if (module) return [`from ${module} import ${name} as Book${name}  # ${where}; pip install llms-from-scratch`];
  return [`# Book${name}: ${where}. Paste the book's class into the notebook as Book${name}, so that it does not replace yours.`];
}

/** `out = module(ck["x"])` as the check ran it: eval mode, or training mode right after torch.manual_seed(seed). */
function forwardLines(module, out, seed) {
  if (seed === null || seed === undefined) return [`${module}.eval()`, "with torch.no_grad():", `    ${out} = ${module}(ck["x"])`];
  return [`${module}.train()  # as your file says: training mode, torch.manual_seed(${seed}) right before the forward`, `torch.manual_seed(${seed})`, "with torch.no_grad():", `    ${out} = ${module}(ck["x"])`];
}

/**
 * The lines that confirm the verdict in PyTorch.
 * @param o {report (lab.checkModule's), book (the class's {chapter, folder, file, section}, or null), fileName}
 * @returns {string} Python: load the file, run the book's module on its x, print both outputs (or their
 *   largest difference), and for an explaining cause the line to change and the check that then passes.
 */
export function confirmCode({ report, book, fileName = "check.pt" }) {
  const name = report.call.slice(0, report.call.indexOf("("));
  const L = [
    "import torch",
    ...bookClassLines(report, book, name),
    `ck = torch.load(${pyPath(fileName)})`,
    'weights = {k: v for k, v in ck["state_dict"].items() if k.split(".")[-1] != "mask"}  # the mask buffer: the class makes its own',
    `book = Book${report.call}`,
    "book.load_state_dict(weights, strict=False)",
    ...forwardLines("book", "book_output", report.seed),
    `print((book_output - ck["output"]).abs().max())  # the largest difference${report.agree ? "" : ", as the page found it (nan: NaN where the book has numbers)"}`,
  ];
  const d = report.difference;
  if (d?.stage === "output") L.push(`print(ck["output"]${rowIndex(d)})  # yours, where it first differs`, `print(book_output${rowIndex(d)})  # the book's`);
  const cause = report.causes.find((c) => c.explains);
  if (!cause) return L.join("\n");
  L.push(
    "",
    "# Your output is what this line gives. In your class's forward, change it (and every line written like it)",
    `#     ${cause.line}`,
    "# to the book's",
    `#     ${cause.fix}`,
    "# then make your module `mha` again and give it the same weights:",
    "mha.load_state_dict(weights, strict=False)",
    ...forwardLines("mha", "yours", report.seed),
    "print(torch.allclose(yours, book_output, rtol=1e-5, atol=1e-5))  # True: your module now computes the book's",
  );
  return L.join("\n");
}
