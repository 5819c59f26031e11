#!/usr/bin/python3
"""PyTorch reference for bench/gpt2.mjs: the book's chapter 4 GPTModel at GPT-2 small's size
(768 wide, 12 heads, 12 blocks, 1024 positions, 50,257 tokens, qkv_bias=True), eval mode, under
torch.no_grad(), on one thread (OPENBLAS_NUM_THREADS=1). Its weights are random: timing does not
depend on them. It reads lines:
    "T reps"  -> {"T": T, "samples_ms": [...]}   (one warm-up forward first; T token ids)
    "quit"
The first line it prints describes the set-up. The forward is GPTModel's own: logits at every
position (ours computes them at the last one only), weights already in memory (ours reads each block
from the file on every run).
"""
import json
import os
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
try:
    import torch
except Exception as e:  # noqa: BLE001
    print(json.dumps({"ready": False, "error": f"import torch failed: {e}"}), flush=True)
    sys.exit(0)

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures"))
from generate_gpt2 import GPTModel  # noqa: E402  the same book code the fixtures use
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_baseline import report, threads  # noqa: E402

torch.set_num_threads(threads())
torch.manual_seed(0)
cfg = {"vocab_size": 50257, "context_length": 1024, "emb_dim": 768, "n_heads": 12, "n_layers": 12, "drop_rate": 0.0, "qkv_bias": True}
model = GPTModel(cfg).eval()
print(json.dumps({**report(torch), "parameters": sum(p.numel() for p in model.parameters())}), flush=True)
for line in sys.stdin:
    parts = line.split()
    if not parts or parts[0] == "quit":
        break
    T, reps = int(parts[0]), int(parts[1])
    ids = torch.randint(0, cfg["vocab_size"], (1, T), generator=torch.Generator().manual_seed(T))
    with torch.no_grad():
        model(ids)
        samples = []
        for _ in range(reps):
            t0 = time.perf_counter()
            model(ids)
            samples.append((time.perf_counter() - t0) * 1000)
    print(json.dumps({"T": T, "samples_ms": samples}), flush=True)
