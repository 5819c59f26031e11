// Types of web/lib/head-split.js: a forward split by heads across plain Web Workers (a page that is
// not cross-origin isolated has no threads; its other cores still run Workers).
import type { AttentionModule, ForwardResult, TensorLike } from "./attention-lab.js";

/** Workers that each hold a single-thread core and a copy of the modules they ran. */
export interface HeadSplit {
  /** Workers beside the calling thread (0: every forward runs whole, on the calling thread). */
  readonly workers: number;
  /**
   * `module.forward(x, {training})` split by heads: the Workers each run one share of
   * `module.headShares(workers + 1)`, the calling thread the last, `module.projectHeads` joins them.
   * The output has forward's bits. A module's parameters are copied to a Worker once, and again after
   * `module.revision` changes. Where the heads cannot split it is `module.forward` on this thread (so is a module of a lean lab, loaded with {checkpoints: false}).
   * @param x - `(b, num_tokens, d_in)` row-major; untraced, no KV cache.
   * @throws {@link AttentionError} forward's codes; "worker_failed" (a Worker did not start or load),
   *   "disposed" (after dispose()).
   * @example
   * ```ts
   * import { createHeadSplit } from "attention-lab/head-split";
   * const split = createHeadSplit();            // the cores less one, at most 3
   * const { output } = await split.forward(mha, x, { training: false });
   * ```
   */
  forward(module: AttentionModule, x: TensorLike, options?: { training?: boolean }): Promise<ForwardResult>;
  /** Ends the Workers; forwards in flight reject with "disposed". */
  dispose(): void;
}

/**
 * A head split over `workers` plain Workers (default: the cores less one, 1 to 3; 0 where there is no
 * Worker). `workerUrl`: head-split-worker.js (default: beside head-split.js, started as
 * `new Worker(new URL("./head-split-worker.js", import.meta.url), {type: "module"})`, which webpack 5 and
 * Vite bundle with the library and its `.wasm`; elsewhere serve the package's `web/lib/` files and
 * pass the worker's URL, exported as `attention-lab/head-split-worker.js`).
 * Under Trusted Types (`require-trusted-types-for 'script'`) pass `workerUrl` as a TrustedScriptURL
 * made by a policy the page allows.
 * @throws {@link AttentionError} "bad_options" (slot "workers": not a whole number from 0 to 15, or
 *   Workers asked where there is no Worker); "trusted_types" (slot "workerUrl": the page requires
 *   Trusted Types and the Worker's URL is a plain one).
 */
export function createHeadSplit(options?: { workers?: number; workerUrl?: string | URL | TrustedScriptURLLike }): HeadSplit;

/** A TrustedScriptURL (Trusted Types, which TypeScript's DOM library does not declare): what a policy's createScriptURL returns. */
export interface TrustedScriptURLLike {
  toJSON(): string;
  toString(): string;
}
