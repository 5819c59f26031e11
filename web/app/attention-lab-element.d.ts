// Types of the <attention-lab> element (attention-lab-element.js): the class, its events, and the tag in
// HTMLElementTagNameMap, so `document.querySelector("attention-lab")` is an AttentionLabElement and
// `el.addEventListener("run-complete", (e) => e.detail.outputShape)` is typed. The element's contract in
// words (every attribute, event, CSS property and part) is the JSDoc of the class in the .js, from which
// docs/widget.md is generated; this file types the same surface for TypeScript.
import type { AttentionError, ClassName, ErrorCode, SlotName, SlotValue, StageId, Tensor } from "../lib/attention-lab.js";

/** run-complete's detail, and what `el.run()` resolves to. */
export interface RunCompleteDetail {
  /** The module class, e.g. "MultiHeadAttention". */
  className: ClassName;
  /** The config as the library read it, e.g. `{d_in: 3, d_out: 2, context_length: 6, dropout: 0, num_heads: 2}`. */
  config: Partial<Record<SlotName, SlotValue>>;
  /** The positional Python call, e.g. "MultiHeadAttention(3, 2, 6, 0.0, 2)". */
  pythonCall: string;
  /** True in training mode (dropout on), false in eval mode. */
  training: boolean;
  /** The output's shape, e.g. `[2, 6, 2]` (b, num_tokens, output width). */
  outputShape: number[];
  /** The output: its shape (as `outputShape`) and its values, row-major float32 (`output.data`). */
  output: Tensor;
  /** The traced stages' ids, in trace order. */
  stages: StageId[];
  /** How long the run took, in milliseconds (the forward and drawing its trace). */
  durationMs: number;
}

/** run-error's detail: the first error of a failed, cancelled or blocked run. */
export interface RunErrorDetail {
  /** The error's code, e.g. "heads_divisibility". */
  code: ErrorCode;
  /** The slot it names, or "". */
  slot: string;
  /** What went wrong, with the values. */
  message: string;
  /** How to fix it, or "". */
  hint: string;
}

/** A diagnostic of setup-change's detail, as the library's `setup` gives it. */
export interface SetupDiagnostic {
  code: ErrorCode;
  severity: "error" | "warning" | "info";
  /** The first slot it names, or "". */
  slot: string;
  slots: string[];
  message: string;
  hint: string;
}

/** setup-change's detail: the setup and whether it can run. */
export interface SetupChangeDetail {
  /** False when the Run button is off. */
  valid: boolean;
  /** Why it cannot run ("" when it can). */
  reason: string;
  className: ClassName;
  config: Partial<Record<SlotName, SlotValue>>;
  /** Configuration, call, tokens and input diagnostics, in that order. */
  diagnostics: SetupDiagnostic[];
}

/**
 * load-error's detail: why the widget could not start ("wasm_csp": the page's Content-Security-Policy
 * does not let WebAssembly compile; "wasm_fetch", "wasm_binary": the .wasm; "internal"), or, with the
 * widget running on, why its background Worker could not ("trusted_types"). The hint names what to change.
 */
export interface LoadErrorDetail {
  code: ErrorCode;
  message: string;
  hint: string;
}

/** The element's events (each bubbles and is composed: a listener on the document hears it). */
export interface AttentionLabEventMap {
  "run-complete": CustomEvent<RunCompleteDetail>;
  "run-error": CustomEvent<RunErrorDetail>;
  "setup-change": CustomEvent<SetupChangeDetail>;
  "load-error": CustomEvent<LoadErrorDetail>;
}

/** `<attention-lab>`: the lab as one element (docs/widget.md). */
export declare class AttentionLabElement extends HTMLElement {
  /**
   * Runs the forward pass of the current setup; resolves once the trace is on screen. A hidden widget
   * that has not loaded yet loads for it.
   * @throws {@link AttentionError} with the run's code (e.g. "heads_divisibility", "too_large"), or the
   *   load's ("wasm_csp", "wasm_fetch", ...) when the widget could not start.
   */
  run(): Promise<RunCompleteDetail>;
  /** The current setup as the library reads it, `null` until the element has loaded. */
  readonly setup: { className: ClassName; config: Partial<Record<SlotName, SlotValue>> } | null;
  addEventListener<K extends keyof AttentionLabEventMap>(type: K, listener: (this: AttentionLabElement, ev: AttentionLabEventMap[K]) => unknown, options?: boolean | AddEventListenerOptions): void;
  addEventListener<K extends keyof HTMLElementEventMap>(type: K, listener: (this: AttentionLabElement, ev: HTMLElementEventMap[K]) => unknown, options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject, options?: boolean | AddEventListenerOptions): void;
  removeEventListener<K extends keyof AttentionLabEventMap>(type: K, listener: (this: AttentionLabElement, ev: AttentionLabEventMap[K]) => unknown, options?: boolean | EventListenerOptions): void;
  removeEventListener<K extends keyof HTMLElementEventMap>(type: K, listener: (this: AttentionLabElement, ev: HTMLElementEventMap[K]) => unknown, options?: boolean | EventListenerOptions): void;
  removeEventListener(type: string, listener: EventListenerOrEventListenerObject, options?: boolean | EventListenerOptions): void;
}

declare global {
  interface HTMLElementTagNameMap {
    "attention-lab": AttentionLabElement;
  }
}
