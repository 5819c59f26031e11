#!/usr/bin/python3
"""The onnxruntime-web peer's model for npm run bench (run with Debian's /usr/bin/python3 and python3-torch).

    onnx_export.py --weights FILE --out FILE.onnx

Exports the book's chapter-3 MultiHeadAttention(768, 768, 1024, 0.0, 12) (the class as written in
ch03/01_main-chapter-code, from tests/fixtures/generate_fixtures.py) holding our parameters with
torch.onnx.export (opset 17, the num_tokens axis dynamic, eval mode): the graph PyTorch itself makes of the
book's code, which onnxruntime then optimises as it loads it. FILE is raw float32 in this order:
W_query.weight, W_key.weight, W_value.weight (768 x 768 each, (out, in)), out_proj.weight, out_proj.bias
(bench/run.mjs's torchEngine writes it). Prints one JSON line: {"ok": true, "bytes": n, "torch": version}.
"""
import io
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "fixtures"))

D, H, CONTEXT = 768, 12, 1024


def main():
    args = sys.argv[1:]
    weights = args[args.index("--weights") + 1]
    out = args[args.index("--out") + 1]
    import numpy as np
    import torch
    from generate_fixtures import MultiHeadAttention

    mha = MultiHeadAttention(D, D, CONTEXT, 0.0, H).eval()
    w = np.fromfile(weights, dtype=np.float32)
    n = D * D
    assert w.size == 4 * n + D, f"{weights}: {w.size} floats, expected {4 * n + D}"
    with torch.no_grad():
        for i, lin in enumerate([mha.W_query, mha.W_key, mha.W_value, mha.out_proj]):
            lin.weight.copy_(torch.from_numpy(w[i * n: (i + 1) * n].reshape(D, D)))
        mha.out_proj.bias.copy_(torch.from_numpy(w[4 * n:]))
    buf = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(mha, torch.zeros(1, 8, D), buf, opset_version=17, input_names=["x"],
                          output_names=["context_vec"], dynamic_axes={"x": {1: "num_tokens"}, "context_vec": {1: "num_tokens"}})
    with open(out, "wb") as f:
        f.write(buf.getvalue())
    print(json.dumps({"ok": True, "bytes": len(buf.getvalue()), "torch": torch.__version__}), flush=True)


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # noqa: BLE001 - report any failure as data
        print(json.dumps({"ok": False, "error": f"{type(e).__name__}: {e}"}), flush=True)
