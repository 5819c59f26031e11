// lab.checkModule's reading of what a reader hands over (the page's snippet saves it as a check file):
// {call, stateDict, x, output, stages, seed}, read once into the plain arguments of the core's checkModule.
// The core decides everything else (the call's diagnostics, the state dict's keys and shapes, the
// stages' shapes, the memory estimate, the seed's range): this module only reads the object's fields.
import { nearestName } from "./options.js";
import { AttentionError, notASeed, reading, valueText } from "./values.js";

/** The fields of lab.checkModule's argument, in the order the core takes them. */
const FIELDS = ["call", "stateDict", "x", "output", "stages", "seed"];

function refuse(slot, message, hint) {
  return new AttentionError({ code: "bad_options", slot, message, hint });
}

/** The argument's own fields, read once; a name it has no field of is refused with the nearest one. */
function fieldsOf(file) {
  if (file === null || typeof file !== "object") {
    throw refuse("file", `lab.checkModule takes {call, stateDict, x, output, stages, seed}, got ${valueText(file)}`, 'Pass what the check snippet saved: {call, stateDict, x, output}, and stages and seed if you have them.');
  }
  const plain = reading("file", () => ({ ...file }));
  const unknown = Object.keys(plain).find((k) => !FIELDS.includes(k));
  if (unknown !== undefined) {
    const guess = nearestName(unknown, FIELDS);
    throw new AttentionError({
      code: "unknown_option",
      slot: unknown,
      message: `lab.checkModule's file has no field ${JSON.stringify(unknown)}${guess ? `: did you mean ${guess}?` : ""}`,
      hint: `${guess ? `Rename it to ${guess}. ` : ""}Its fields are ${FIELDS.join(", ")}.`,
    });
  }
  return plain;
}

/** stateDict as [{name, tensor}]: a list of {name, shape, data} (module.parameters()) or an object of name -> {shape, data}. */
function stateDictOf(stateDict, toTensor) {
  if (stateDict === null || typeof stateDict !== "object") {
    throw refuse("stateDict", `stateDict must be the module's state_dict(), got ${valueText(stateDict)}`, "Pass an object of name -> {shape, data}, or a list of {name, shape, data}.");
  }
  const entries = Array.isArray(stateDict) ? stateDict.map((p) => [reading("stateDict", () => p?.name), p]) : Object.entries(reading("stateDict", () => ({ ...stateDict })));
  return entries.map(([name, t]) => {
    if (typeof name !== "string") throw refuse("stateDict", "every stateDict entry needs its PyTorch name as a string", "Pass the entries of module.state_dict() with their names.");
    return { name, tensor: toTensor(t, name) };
  });
}

/** stages as [{name, tensor}] (none when absent): an object of stage id -> {shape, data}; the core checks the ids. */
function stagesOf(stages, toTensor) {
  if (stages === undefined || stages === null) return [];
  if (typeof stages !== "object" || Array.isArray(stages)) {
    throw refuse("stages", `stages must be an object of stage id -> tensor, got ${valueText(stages)}`, "For example {attn_scores, attn_weights, context_vec}, each {shape, data}, or leave it out.");
  }
  return Object.entries(reading("stages", () => ({ ...stages }))).map(([name, t]) => ({ name, tensor: toTensor(t, name) }));
}

/** seed as the core takes it: null (absent: eval mode), or a number (the core applies the seed range, lab.seedRange). */
function seedOf(seed) {
  if (seed === undefined || seed === null) return null;
  if (typeof seed !== "number") throw notASeed(seed);
  return seed;
}

/**
 * The core's arguments of lab.checkModule(file): [call, stateDict, x, output, stages, seed]. `toTensor`
 * reads a tensor as the facade does (AttentionError tensor_shape / tensor_size naming it).
 */
export function checkArguments(file, toTensor) {
  const { call, stateDict, x, output, stages, seed } = fieldsOf(file);
  if (typeof call !== "string") {
    throw new AttentionError({ code: "empty", slot: "call", message: `call must be the constructor call as written, got ${valueText(call)}`, hint: "Pass the class's constructor call as your notebook wrote it, sizes included." });
  }
  const checkedSeed = seedOf(seed);
  return [call, stateDictOf(stateDict, toTensor), toTensor(x, "x"), toTensor(output, "output"), stagesOf(stages, toTensor), checkedSeed];
}
