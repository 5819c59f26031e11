// The module Worker of a head split (head-split.js): one single-thread core (the full binary: the
// lean one has no head split), copies of the modules it is sent ({hold}), and one share of a
// forward's heads per {share} message, answered with that share's columns of heads_concat (transferred).
import { loadAttentionLab } from "./attention-lab.js";

const ready = loadAttentionLab({ threads: 1 });
/** The modules this Worker holds, by the key head-split.js gave them. */
const modules = new Map();

/** An error as plain data (an AttentionError's code, slot, message and hint). */
const plainError = (err) => ({ code: err?.code ?? "internal", slot: err?.slot ?? "", message: err?.message ?? String(err), hint: err?.hint ?? "" });

self.addEventListener("message", async (e) => {
  const { id, hold, release, share, key, x, training } = e.data;
  if (release) {
    modules.get(release)?.dispose();
    modules.delete(release);
    return;
  }
  try {
    const lab = await ready;
    if (hold) {
      modules.get(hold.key)?.dispose();
      modules.set(hold.key, lab.fromParameters(hold.className, hold.config, hold.parameters));
      self.postMessage({ id, ok: true, value: true });
      return;
    }
    const module = modules.get(key);
    if (!module) throw { code: "disposed", slot: "module", message: "this Worker holds no copy of that module", hint: "" };
    const part = module.forwardShare(x, share, { training });
    self.postMessage({ id, ok: true, value: part }, [part.data.buffer]);
  } catch (err) {
    self.postMessage({ id, ok: false, error: plainError(err) });
  }
});
