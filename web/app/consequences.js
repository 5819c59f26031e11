// The sentence under each slot card: what the slot's current value leads to, from the core's
// description of the setup (head_dim, output width, mask bytes). Text only; the view places it.
import { S } from "./strings.js";
import { bytesText } from "./format.js";

/** What the current value of one slot leads to, in a sentence (empty when nothing to say). */
export function consequence(name, c, d, training, hideWidth) {
  const C = S.consequences;
  // how the class makes heads, stores weights and masks: the core's facts (d.class), as keys
  const heads = d.class.heads;
  const perHead = d.outputWidth !== c.d_out && d.outputWidth === c.num_heads * c.d_out;  // the width rule gives num_heads x d_out
  const numbers = { h: c.num_heads, dOut: c.d_out, headDim: d.headDim, width: d.outputWidth, square: d.class.needsSquare };
  switch (name) {
    case "d_in":
      return d.class.weights === "matrix" ? C.dInV1(c.d_in, c.d_out) : C.dIn(c.d_in, c.d_out);
    case "d_out":
      if (hideWidth) return perHead ? C.dOutHidden(c.d_out) : "";
      return C.dOut[heads](numbers);
    case "context_length":
      return C.contextLength({ ctx: c.context_length, bytes: bytesText(d.maskBytes ?? 0), dtype: d.class.maskBufferDtype });
    case "dropout":
      if (d.class.dropoutRule === "ignored") return C.dropoutIgnored;
      if (!(c.dropout > 0)) return C.dropoutOff;
      if (!training) return C.dropoutEval(c.dropout);
      return c.dropout >= 1 ? C.dropoutAll : C.dropoutTrain(c.dropout, Number((1 / (1 - c.dropout)).toFixed(4)));
    case "num_heads":
      return C.numHeads[heads](numbers);
    case "qkv_bias":
      return c.qkv_bias ? C.biasOn(c.d_out, perHead) : C.biasOff;
    case "latent_dim":
      return d.latentDim != null ? C.latentDim(d.latentDim, c.latent_dim == null, c.d_out) : "";
    default:
      return "";
  }
}
