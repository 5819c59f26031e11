// Compiled by types.test.mjs with usage.ts: the <attention-lab> element's types (web/app/attention-lab-element.d.ts)
// as a host page uses them: the tag in HTMLElementTagNameMap, run(), setup, and each event's detail.
import type { AttentionLabElement, LoadErrorDetail, RunCompleteDetail } from "../../../web/app/attention-lab-element.js";
import type { ErrorCode, StageId } from "attention-lab";

export async function host(): Promise<void> {
  const el = document.querySelector("attention-lab");
  if (el === null) return;
  const same: AttentionLabElement = el;
  const made: AttentionLabElement = document.createElement("attention-lab");
  made.setAttribute("call", "CausalAttention(3, 2, 6, 0.5)");
  const detail: RunCompleteDetail = await same.run();
  const shape: number[] = detail.outputShape;
  const ids: StageId[] = detail.stages;
  const values: Float32Array = detail.output.data;
  const outputShape: number[] = detail.output.shape;
  const className: string | undefined = el.setup?.className;
  el.addEventListener("load-error", (e) => {
    const d: LoadErrorDetail = e.detail;
    const code: ErrorCode = d.code;
    console.log(code === "wasm_csp" || code === "trusted_types", d.hint);
  });
  el.addEventListener("run-error", (e) => console.log(e.detail.code, e.detail.slot));
  el.addEventListener("setup-change", (e) => console.log(e.detail.valid, e.detail.diagnostics.map((x) => x.severity)));
  el.addEventListener("click", (e) => console.log(e.clientX));
  console.log(shape, ids, values, outputShape, className);
}
