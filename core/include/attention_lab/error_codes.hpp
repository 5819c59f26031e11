// Every code an AttentionError or a Diagnostic carries, in one table with its group and meaning.
// scripts/error-codes.mjs writes the ErrorCode union of web/lib/attention-lab.d.ts from this table
// (npm run lint fails when the .d.ts is out of date); tests/native/error_codes_test.cpp checks that
// every code the core mints is here, tests/node/error-codes.test.mjs the bindings, facade and page.
#pragma once

#include <string_view>

namespace attention_lab {

/// One stable machine code: its group (an id of kErrorCodeGroups) and what it means, in one line.
struct ErrorCodeInfo {
  const char* code;
  const char* group;
  const char* meaning;
};

/// A group of codes: its id (ErrorCodeInfo::group) and the title the .d.ts union shows above it.
struct ErrorCodeGroup {
  const char* id;
  const char* title;
};

// clang-format off
/// The groups, in the order of kErrorCodes.
inline constexpr ErrorCodeGroup kErrorCodeGroups[] = {
    {"calls", "slots and pasted calls (check, parseCall, create)"},
    {"tensors", "tensors and parameters"},
    {"generators", "generators"},
    {"caches", "KV caches (module.newCache, forward with a cache)"},
    {"copies", "copies, conversions, comparisons"},
    {"checkpoints", "checkpoints (loadCheckpoint, checkpointInput)"},
    {"loading", "loading the core (loadAttentionLab)"},
    {"arguments", "arguments and lifetimes"},
    {"failures", "failures (never expected; please report them)"},
    {"page", "the page's own codes (web/app; the library never raises them)"},
};

/// Every code, grouped: one entry per line, {"code", "group", "meaning"}, as scripts/error-codes.mjs
/// reads them. A meaning that starts with "warning:" or "info:" is that severity; the rest are errors.
/// A new code goes here first (then `node scripts/error-codes.mjs` rewrites the .d.ts).
inline constexpr ErrorCodeInfo kErrorCodes[] = {
    {"unknown_class", "calls", "no such class"},
    {"unknown_slot", "calls", "a slot the class does not have (did-you-mean in the hint)"},
    {"missing_slot", "calls", "a required slot is not given"},
    {"duplicate_slot", "calls", "a slot given twice in a call"},
    {"extra_positional", "calls", "more positional values than the class takes"},
    {"positional_after_keyword", "calls", "Python's own syntax rule"},
    {"syntax", "calls", "the call text is not a Python call"},
    {"empty", "calls", "no call text"},
    {"too_long", "calls", "call text over the length limit"},
    {"not_a_literal", "calls", "a value that is not a Python literal"},
    {"wrong_type", "calls", "e.g. a float where an int goes"},
    {"dropout_range", "calls", "dropout outside [0, 1]"},
    {"non_positive", "calls", "a size of 0 or less"},
    {"heads_divisibility", "calls", "d_out not divisible by num_heads (the fused classes)"},
    {"kv_groups_divisibility", "calls", "GroupedQueryAttention: num_heads not divisible by num_kv_groups"},
    {"mha_slot_order", "calls", "a bonus class given MultiHeadAttention's order (context_length where dropout goes, or num_heads where context_length goes)"},
    {"d_in_d_out_differ", "calls", "a class whose forward works on x's own width (a view, nn.MultiheadAttention's embed_dim) given d_in != d_out"},
    {"dtype", "calls", "a dtype other than None or torch.float32"},
    {"rope_head_dim", "calls", "a class with RoPE given an odd head_dim (d_out / num_heads): RoPE rotates halves"},
    {"slots_swapped", "calls", "two values that look swapped (d_in/d_out, dropout/num_heads)"},
    {"too_large", "calls", "over the memory budget (the core's one budget: the page refuses runs by it too), or beyond any model"},
    {"input_rank", "calls", "input of the wrong rank for the class"},
    {"input_width", "calls", "input's last axis is not d_in"},
    {"input_empty", "calls", "no tokens"},
    {"context_too_short", "calls", "more tokens than context_length"},
    {"layer_count_as_heads", "calls", "warning: a layer count where a head count goes"},
    {"wrapper_total_width", "calls", "warning: the wrapper's d_out is per head"},
    {"d_out_per_head", "calls", "warning or hint: d_out given as one head's width to a class whose heads share d_out"},
    {"one_head", "calls", "info: one head"},
    {"bool_as_int", "calls", "warning: 0/1 for qkv_bias"},
    {"square_weights", "calls", "info: d_in == d_out hides a missing transpose"},
    {"dropout_eval", "calls", "warning: dropout has no effect in eval mode"},
    {"dropout_all", "calls", "warning: dropout = 1.0 zeroes every attention weight in training mode"},
    {"dropout_ignored", "calls", "warning: the class stores dropout but its forward applies none (FlexAttention)"},
    {"inverted_mask", "calls", "warning: a boolean mask passed where True means \"attend\", so each query sees only later keys (NaN rows)"},
    {"non_finite_stage", "calls", "finite inputs gave NaN or infinity; names the first stage and where (a module forward's warning; a GPT-2 run's error, naming the block)"},
    {"tensor_shape", "tensors", "not a {shape, data} tensor, or sizes that are not whole numbers"},
    {"tensor_size", "tensors", "data length does not fit the shape"},
    {"tensor_axis", "tensors", "an axis out of range"},
    {"non_finite_input", "tensors", "NaN or infinity in the input"},
    {"non_finite_parameter", "tensors", "NaN or infinity in a parameter (names it and the first index)"},
    {"missing_parameter", "tensors", "a parameter the class has was not given"},
    {"unknown_parameter", "tensors", "a name the class has no parameter (or buffer) for"},
    {"parameter_shape", "tensors", "a parameter of the wrong shape"},
    {"mask_buffer", "tensors", "a state_dict mask buffer that is not the causal mask of context_length"},
    {"seed", "generators", "a seed that is not a whole number"},
    {"generator", "generators", "a generator option not made by manualSeed"},
    {"generator_missing", "generators", "dropout in training mode needs a generator"},
    {"generator_state", "generators", "a generator state that cannot be restored"},
    {"cache_unsupported", "caches", "a KV cache for a class without a causal mask over its own keys"},
    {"cache_batch", "caches", "a chunk whose batch size differs from the earlier chunks of its cache"},
    {"cache_full", "caches", "a cache past context_length (the mask buffer's rows) without a window"},
    {"cache_window", "caches", "a chunk longer than the cache's window (a module's chunk, or a GPT-2 prompt longer than generate's window), or a window that is not a whole number from 1"},
    {"cache_module", "caches", "a cache used with another module than the one that made it"},
    {"copy_plan", "copies", "a copy plan entry that does not fit"},
    {"copy_unsupported", "copies", "copyWeights between these classes is not supported"},
    {"convert_layout", "copies", "layout not \"stacked\" or \"interleaved\""},
    {"convert_unsupported", "copies", "convert takes a wrapper or a fused MultiHeadAttention"},
    {"compare_unsupported", "copies", "compare takes two modules"},
    {"check_tensor", "copies", "checkModule given an output or stage of another shape than the book's forward gives (names it and the shape with its axes), or a stage id other than attn_scores, attn_weights, context_vec"},
    {"check_file", "copies", "lab.checkModule given a file that is not a check file: a safetensors file, or a torch.save dict without its call (a string), x, output or state_dict, or whose seed is not an int (names the key; the hint shows the snippet line that writes it)"},
    {"checkpoint_source", "checkpoints", "not an ArrayBuffer, view or Blob, or a detached buffer"},
    {"checkpoint_read", "checkpoints", "the file could not be read"},
    {"checkpoint_truncated", "checkpoints", "the file is cut off"},
    {"checkpoint_bad_header", "checkpoints", "not a safetensors header (names the byte)"},
    {"checkpoint_duplicate_key", "checkpoints", "a key given twice in the header"},
    {"checkpoint_bad_offsets", "checkpoints", "offsets that overlap, leave a hole, or disagree with the shape"},
    {"checkpoint_dtype", "checkpoints", "weights that are not floating point"},
    {"checkpoint_missing_key", "checkpoints", "a key the layer needs is missing"},
    {"checkpoint_layer", "checkpoints", "no such layer, or a layer that is not a whole number"},
    {"checkpoint_shape", "checkpoints", "a tensor of the wrong shape for GPT-2"},
    {"checkpoint_num_heads", "checkpoints", "the head count is needed or does not divide d"},
    {"checkpoint_context_length", "checkpoints", "context_length cannot be found"},
    {"checkpoint_config_mismatch", "checkpoints", "`into` does not fit the file"},
    {"checkpoint_token", "checkpoints", "a token id outside the vocabulary"},
    {"checkpoint_legacy_format", "checkpoints", "a torch.save file in the legacy format (torch < 1.6) that this reader does not read: saved big-endian, or holding a torch < 0.4 storage view; the hint says to save it again"},
    {"checkpoint_zip", "checkpoints", "a torch.save zip whose records are not what torch writes, or whose entry offsets or sizes lie (names the entry)"},
    {"checkpoint_zip_compressed", "checkpoints", "a compressed or encrypted entry in a torch.save zip (torch stores them uncompressed; names it)"},
    {"checkpoint_pickle", "checkpoints", "a data.pkl the state dict reader cannot read: an opcode outside its subset, a malformed or cut-off argument (names the opcode and byte)"},
    {"checkpoint_pickle_global", "checkpoints", "a pickle naming a global a state dict never needs, e.g. os.system (names it; nothing is run)"},
    {"checkpoint_pickled_module", "checkpoints", "a whole pickled object, e.g. torch.save(model) (names its class; the hint says torch.save(model.state_dict(), ...))"},
    {"checkpoint_storage", "checkpoints", "a tensor that reaches past its storage, a storage shorter than it claims, or one the zip does not hold (names the key)"},
    {"checkpoint_limit", "checkpoints", "a torch.save file past the reader's bounds: zip entries, pickle bytes, values (a million-entry dict), nesting (names the bound)"},
    {"wasm_options", "loading", "loadAttentionLab given two of wasmUrl, wasmBinary and wasmPaths, or a checkpoints that is not a boolean"},
    {"wasm_url", "loading", "wasmUrl that is not a URL or a non-empty string, wasmPaths that is not a folder ending in / or a function giving URLs, or a .wasm that cannot be located (a classic-script bundle)"},
    {"wasm_binary", "loading", "wasmBinary (or what wasmUrl served) that is not attention_core.wasm: not bytes, detached, no \\0asm magic, or from another build"},
    {"wasm_fetch", "loading", "the .wasm could not be fetched or read (network error, HTTP status, missing file, no fetch); names the file asked for and its URL"},
    {"wasm_csp", "loading", "the page's Content-Security-Policy does not let WebAssembly compile (even the empty module is refused, so not a broken binary): loadAttentionLab, the element's load-error and run() name the directive to add (script-src 'wasm-unsafe-eval')"},
    {"wasm_loaded", "loading", "the core is already loaded from another source (it is loaded once: pass the options on the first call)"},
    {"worker_failed", "loading", "a head split's Worker (createHeadSplit) that could not start or load its core (CSP worker-src, a missing file)"},
    {"trusted_types", "loading", "the page requires Trusted Types and refuses a Worker's script URL: the element's policy (attention-lab) is not allowed (its load-error names the trusted-types entry to add; runs stay on the page's thread), or a head split's Worker has a plain URL (createHeadSplit({workerUrl}) takes a TrustedScriptURL)"},
    {"bad_threads", "loading", "loadAttentionLab's threads (or the core's set_threads) that is not a whole number from 1 to 16"},
    {"no_head_split", "loading", "a head-split method (headShares, forwardShare, projectHeads, revision) on a lab loaded with {checkpoints: false}: the lean binary has none"},
    {"no_checkpoints", "loading", "a checkpoint method (openCheckpoint, loadCheckpoint, checkpointInput, loadGPT2) on a lab loaded with {checkpoints: false}: the lean binary has no readers"},
    {"unreadable_argument", "arguments", "reading an argument threw (a getter, a Proxy trap)"},
    {"head_share", "arguments", "a share of a forward's heads (forwardShare, projectHeads) that is not whole key/value groups, or with a trace, a cache or dropout acting, or joined heads of the wrong shape"},
    {"bad_options", "arguments", "an options argument that is not an object"},
    {"unknown_option", "arguments", "an options object with a name the call has no option of, e.g. a misspelt tempreature (names it; did-you-mean in the message)"},
    {"disposed", "arguments", "the module, generator, checkpoint file, GPT-2 model or lazy trace was disposed"},
    {"results_not_released", "arguments", "the WebAssembly heap is full of results not released (lazy traces, modules, KV caches) while the call alone fits the budget: names them and how to release them (dispose())"},
    {"trace_stage", "arguments", "a lazy trace asked for a stage it does not have (names the id and lists the trace's stages)"},
    {"trace_range", "arguments", "a lazy trace query out of range: a batch or head index, a window's offset + size past its axis, a heatmap side outside 1..4096 (names the axis and value)"},
    {"busy", "arguments", "a GPT-2 model is already running (one run at a time per model)"},
    {"not_in_progress", "arguments", "a step of a GPT-2 run or generation with none in progress: the model has no run, no generation, or its generation is finished (model.run and model.generate start one)"},
    {"cancelled", "arguments", "a GPT-2 run was cancelled through its signal"},
    {"run_option", "arguments", "an option of model.run or model.estimateBytes out of its range (attention: \"full\" or \"thumbnails\"; num_tokens: a whole number from 1 to n_ctx); names it"},
    {"generate_option", "arguments", "an option of model.generate out of its range (maxNewTokens, temperature, topK, eosId, cache, resident, window, attention); names it"},
    {"cache_context", "arguments", "a GPT-2 KV cache past the position table: prompt + maxNewTokens - 1 > n_ctx, with a window too (names both)"},
    {"non_finite_probabilities", "arguments", "sampling met probabilities that are not finite (torch.multinomial refuses them too)"},
    {"callback", "arguments", "a GPT-2 run's onProgress callback threw (the run stopped)"},
    {"out_of_memory", "failures", "the WebAssembly heap ran out"},
    {"internal", "failures", "a bug in attention-lab"},
    {"book_tokens_width", "page", "the book's embeddings (3 numbers wide) chosen while d_in is not 3"},
    {"grid_width", "page", "a typed token grid whose column count is not d_in"},
    {"grid_value", "page", "a cell of the typed token grid that is not a number"},
    {"large_run", "page", "info: a run big enough to go to the background worker"},
    {"blocked", "page", "el.run() on a setup that cannot run for a reason with no code of its own (no words, a bad token count)"},
    {"worker", "page", "the background worker failed (it could not load, or crashed)"},
    {"checkpoint_target", "page", "loading a checkpoint into the current module without a valid MultiHeadAttention in the setup"},
    {"no_tokens", "page", "a checkpoint run given no token"},
    {"tokenizer", "page", "GPT-2's tokenizer could not be loaded"},
    {"error", "page", "something thrown without a code (the page's fallback)"},
};
// clang-format on

/// Whether `code` is one of kErrorCodes.
inline bool is_error_code(std::string_view code) {
  for (const ErrorCodeInfo& info : kErrorCodes)
    if (code == info.code) return true;
  return false;
}

}  // namespace attention_lab
