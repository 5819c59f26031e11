// The sentence under each slot card: what the slot's current value leads to, from the core's
// description of the setup (head_dim, output width, mask bytes). Text only; the view places it.
import { S } from "./strings.js";
import { bytesText } from "./format.js";

/** What the current value of one slot leads to, in a sentence (empty when nothing to say). */
export function consequence(name, c, d, training, hideWidth) {
  const C = S.consequences;
  // how the class makes heads and stores weights: the core's facts (d.class)
  const wrapper = d.class.heads === "modules";
  const mha = d.class.heads === "fused";
  switch (name) {
    case "d_in":
      return d.class.weights === "matrix" ? C.dInV1(c.d_in, c.d_out) : C.dIn(c.d_in, c.d_out);
    case "d_out":
      if (hideWidth) return wrapper ? C.dOutHidden(c.d_out) : "";
      if (wrapper) return C.dOutWrapper(c.num_heads, c.d_out, d.outputWidth);
      if (mha) return C.dOutFused(c.num_heads, d.headDim, c.d_out);
      return C.dOutSingle(c.d_out);
    case "context_length":
      return C.contextLength(c.context_length, bytesText(d.maskBytes ?? 0));
    case "dropout":
      if (!(c.dropout > 0)) return C.dropoutOff;
      if (!training) return C.dropoutEval(c.dropout);
      return c.dropout >= 1 ? C.dropoutAll : C.dropoutTrain(c.dropout, Number((1 / (1 - c.dropout)).toFixed(4)));
    case "num_heads":
      if (mha) return C.numHeadsFused(c.d_out, c.num_heads, d.headDim);
      if (wrapper) return C.numHeadsWrapper(c.num_heads, c.d_out);
      return "";
    case "qkv_bias":
      return c.qkv_bias ? C.biasOn(c.d_out, wrapper) : C.biasOff;
    default:
      return "";
  }
}
