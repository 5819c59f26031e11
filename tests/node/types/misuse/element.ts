// Must NOT compile: the element's types are really consulted (web/app/attention-lab-element.d.ts).
import "../../../../web/app/attention-lab-element.js";

export async function misuse(): Promise<void> {
  const el = document.createElement("attention-lab");
  // expect: Property 'nope' does not exist on type 'LoadErrorDetail'
  el.addEventListener("load-error", (e) => console.log(e.detail.nope));
  // expect: Type 'number\[\]' is not assignable to type 'string'
  const shape: string = (await el.run()).outputShape;
  // expect: Type '"wasm_cps"' is not assignable to type 'ErrorCode'
  el.addEventListener("run-error", (e) => { e.detail.code = "wasm_cps"; });
  // expect: Type 'Tensor' is missing the following properties from type 'Float32Array.*': BYTES_PER_ELEMENT, buffer
  const values: Float32Array = (await el.run()).output;
  console.log(shape, values);
}
