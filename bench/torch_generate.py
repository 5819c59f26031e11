#!/usr/bin/python3
"""PyTorch reference for bench/generate.mjs: the book's KV-cache GPTModel (chapter 4, folder
03_kv-cache, gpt_with_kv_cache.py: MultiHeadAttention with cache_k / cache_v concatenated per call,
GPTModel.current_pos, generate_text_simple_cached) written out here, on the weights of a GPT-2 small-
shaped safetensors file (Hugging Face layout, F32), eval mode, torch.no_grad(), one thread
(OPENBLAS_NUM_THREADS=1, torch.set_num_threads(1)). out_head shares tok_emb's weight, as GPT-2's does.

    /usr/bin/python3 bench/torch_generate.py FILE
It prints one line describing the set-up (versions, the BLAS mapped and its core, a single-thread
(1024 x 768) @ (768 x 768) torch.mm in GFLOP/s, the peak RSS after loading), then reads lines:
    "cached P N"    -> greedy: the prefill of P prompt tokens, then N one-token forwards with the cache
    "uncached P N"  -> greedy: the whole context for every token (generate_text_simple), N + 1 forwards
    "quit"
and answers {"prefill_ms", "decode_ms": [N forwards], "ids": [new ids], "peak_rss_bytes"}. The prompt
is ids (i * 977) % vocab_size for i < P, as bench/generate.mjs gives ours.
"""
import json
import os
import resource
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
try:
    import numpy as np
    import torch
    import torch.nn as nn
except Exception as e:  # noqa: BLE001 - report any import problem as data
    print(json.dumps({"ready": False, "error": f"import torch failed: {e}"}), flush=True)
    sys.exit(0)


class MultiHeadAttention(nn.Module):
    """Chapter 3's MultiHeadAttention with chapter 4's KV cache (gpt_with_kv_cache.py)."""

    def __init__(self, d_in, d_out, context_length, num_heads, qkv_bias):
        super().__init__()
        self.d_out, self.num_heads, self.head_dim = d_out, num_heads, d_out // num_heads
        self.W_query = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_key = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.W_value = nn.Linear(d_in, d_out, bias=qkv_bias)
        self.out_proj = nn.Linear(d_out, d_out)
        self.register_buffer("mask", torch.triu(torch.ones(context_length, context_length), diagonal=1), persistent=False)
        self.cache_k = self.cache_v = None

    def forward(self, x, use_cache=False):
        b, num_tokens, _ = x.shape
        shape = (b, num_tokens, self.num_heads, self.head_dim)
        keys_new, values_new, queries = self.W_key(x).view(shape), self.W_value(x).view(shape), self.W_query(x).view(shape)
        if use_cache:
            if self.cache_k is None:
                self.cache_k, self.cache_v = keys_new, values_new
            else:
                self.cache_k = torch.cat([self.cache_k, keys_new], dim=1)
                self.cache_v = torch.cat([self.cache_v, values_new], dim=1)
            keys, values = self.cache_k, self.cache_v
        else:
            keys, values = keys_new, values_new
        keys, queries, values = keys.transpose(1, 2), queries.transpose(1, 2), values.transpose(1, 2)
        attn_scores = queries @ keys.transpose(2, 3)
        attn_scores.masked_fill_(self.mask.bool()[:num_tokens, :num_tokens], -torch.inf)  # as the book's (one row when decoding)
        attn_weights = torch.softmax(attn_scores / keys.shape[-1] ** 0.5, dim=-1)
        context_vec = (attn_weights @ values).transpose(1, 2).contiguous().view(b, num_tokens, self.d_out)
        return self.out_proj(context_vec)

    def reset_cache(self):
        self.cache_k = self.cache_v = None


# LayerNorm and GELU as the whole-model fixtures write them (the book's chapter 4).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures"))
from generate_gpt2 import GELU, LayerNorm  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_baseline import report, threads  # noqa: E402


class TransformerBlock(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        d = cfg["emb_dim"]
        self.att = MultiHeadAttention(d, d, cfg["context_length"], cfg["n_heads"], cfg["qkv_bias"])
        self.ff = nn.Sequential(nn.Linear(d, 4 * d), GELU(), nn.Linear(4 * d, d))
        self.norm1, self.norm2 = LayerNorm(d), LayerNorm(d)

    def forward(self, x, use_cache=False):
        x = x + self.att(self.norm1(x), use_cache=use_cache)  # drop_rate 0: the dropouts are identities
        return x + self.ff(self.norm2(x))


class GPTModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.tok_emb = nn.Embedding(cfg["vocab_size"], cfg["emb_dim"])
        self.pos_emb = nn.Embedding(cfg["context_length"], cfg["emb_dim"])
        self.trf_blocks = nn.ModuleList([TransformerBlock(cfg) for _ in range(cfg["n_layers"])])
        self.current_pos = 0
        self.final_norm = LayerNorm(cfg["emb_dim"])
        self.out_head = nn.Linear(cfg["emb_dim"], cfg["vocab_size"], bias=False)

    def forward(self, in_idx, use_cache=False):
        seq_len = in_idx.shape[1]
        start = self.current_pos if use_cache else 0
        if use_cache:
            self.current_pos += seq_len
        x = self.tok_emb(in_idx) + self.pos_emb(torch.arange(start, start + seq_len, dtype=torch.long)).unsqueeze(0)
        for blk in self.trf_blocks:
            x = blk(x, use_cache=use_cache)
        return self.out_head(self.final_norm(x))

    def reset_kv_cache(self):
        for blk in self.trf_blocks:
            blk.att.reset_cache()
        self.current_pos = 0


def read_safetensors(path):
    """{key: float32 numpy array} of an F32 safetensors file (a read-only memory map)."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    data = np.memmap(path, dtype=np.uint8, mode="r", offset=8 + n)
    out = {}
    for key, e in header.items():
        if key == "__metadata__":
            continue
        assert e["dtype"] == "F32", f"{key} is {e['dtype']}: the bench writes F32"
        a, b = e["data_offsets"]
        out[key] = data[a:b].view(np.float32).reshape(e["shape"])
    return out


def load_model(path):
    w = read_safetensors(path)
    vocab, d = w["wte.weight"].shape
    n_layer = sum(1 for k in w if k.endswith(".ln_1.weight"))
    cfg = {"vocab_size": vocab, "context_length": w["wpe.weight"].shape[0], "emb_dim": d, "n_heads": d // 64, "n_layers": n_layer, "qkv_bias": True}
    model = GPTModel(cfg).eval()
    t = lambda a: torch.from_numpy(np.array(a))  # noqa: E731  a copy: the map stays read-only
    with torch.no_grad():
        model.tok_emb.weight.copy_(t(w["wte.weight"]))
        model.pos_emb.weight.copy_(t(w["wpe.weight"]))
        model.out_head.weight = model.tok_emb.weight  # tied, as GPT-2 (one copy of wte in memory)
        for L, blk in enumerate(model.trf_blocks):
            p = lambda key: w[f"h.{L}.{key}"]  # noqa: E731
            q, k, v = np.split(p("attn.c_attn.weight"), 3, axis=1)  # Conv1D (in, out): Linear's weight is its transpose
            qb, kb, vb = np.split(p("attn.c_attn.bias"), 3)
            for lin, wt, bs in ((blk.att.W_query, q, qb), (blk.att.W_key, k, kb), (blk.att.W_value, v, vb),
                                (blk.att.out_proj, p("attn.c_proj.weight"), p("attn.c_proj.bias")),
                                (blk.ff[0], p("mlp.c_fc.weight"), p("mlp.c_fc.bias")), (blk.ff[2], p("mlp.c_proj.weight"), p("mlp.c_proj.bias"))):
                lin.weight.copy_(t(wt.T))
                lin.bias.copy_(t(bs))
            blk.norm1.scale.copy_(t(p("ln_1.weight")))
            blk.norm1.shift.copy_(t(p("ln_1.bias")))
            blk.norm2.scale.copy_(t(p("ln_2.weight")))
            blk.norm2.shift.copy_(t(p("ln_2.bias")))
        model.final_norm.scale.copy_(t(w["ln_f.weight"]))
        model.final_norm.shift.copy_(t(w["ln_f.bias"]))
    return model, cfg


def peak_rss():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def main():
    torch.set_num_threads(threads())
    model, cfg = load_model(sys.argv[1])
    print(json.dumps({**report(torch), "parameters": sum(p.numel() for p in model.parameters()), "peak_rss_bytes": peak_rss()}), flush=True)
    with torch.no_grad():
        for line in sys.stdin:
            parts = line.split()
            if not parts or parts[0] == "quit":
                break
            mode, P, N = parts[0], int(parts[1]), int(parts[2])
            idx = torch.tensor([[(i * 977) % cfg["vocab_size"] for i in range(P)]])
            decode_ms, ids = [], []
            if mode == "cached":  # generate_text_simple_cached
                model.reset_kv_cache()
                t0 = time.perf_counter()
                logits = model(idx, use_cache=True)
                prefill_ms = (time.perf_counter() - t0) * 1000
                for _ in range(N):
                    next_idx = logits[:, -1].argmax(dim=-1, keepdim=True)
                    ids.append(int(next_idx))
                    t0 = time.perf_counter()
                    logits = model(next_idx, use_cache=True)
                    decode_ms.append((time.perf_counter() - t0) * 1000)
                model.reset_kv_cache()
            else:  # generate_text_simple: the whole (cropped) context every time
                prefill_ms = None
                for i in range(N + 1):
                    t0 = time.perf_counter()
                    logits = model(idx[:, -cfg["context_length"]:])
                    ms = (time.perf_counter() - t0) * 1000
                    if i == 0:
                        prefill_ms = ms
                    else:
                        decode_ms.append(ms)
                    next_idx = torch.argmax(logits[:, -1, :], dim=-1, keepdim=True)
                    ids.append(int(next_idx))
                    idx = torch.cat((idx, next_idx), dim=1)
                ids = ids[:N]
            print(json.dumps({"mode": mode, "prefill_ms": prefill_ms, "decode_ms": decode_ms, "ids": ids, "peak_rss_bytes": peak_rss()}), flush=True)


if __name__ == "__main__":
    main()
