#!/usr/bin/env python3
"""Writes the seed corpus of the fuzz targets: tests/fuzz/corpus/<target>/<name>.

Run from the repo root: /usr/bin/python3 tests/fuzz/make_corpus.py (standard library only; the output is
deterministic). The validator seeds follow the byte layout documented in fuzz_entries.hpp.
"""
import json
import pathlib
import struct

ROOT = pathlib.Path(__file__).resolve().parent
FIXTURES = ROOT.parent / "fixtures" / "checkpoints"


def write(target, name, data):
    folder = ROOT / "corpus" / target
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))


# ---- fuzz_call_parser: calls as people paste them, good and bad ----
calls = {
    "gpt2_small": "MultiHeadAttention(768, 768, 1024, 0.0, 12)",
    "book_mha": "mha = MultiHeadAttention(d_in=3, d_out=2, context_length=6, dropout=0.0, num_heads=2)",
    "keywords_newlines": "nn.MultiHeadAttention(\n  d_in=768, d_out=768,  # GPT-2 small\n  context_length=1024, dropout=.0, num_heads=12, qkv_bias=True,\n)",
    "causal": "torch.nn.CausalAttention(3, 2, 6, 0.5, qkv_bias=False)",
    "wrapper": "MultiHeadAttentionWrapper(3, 1, 6, 0.0, 2)",
    "v1": "SelfAttention_v1(3, 2)",
    "v2_bias": "SelfAttention_v2(d_in=3, d_out=2, qkv_bias=True)",
    "swapped": "MultiHeadAttention(768, 768, 1024, 12, 0.1)",
    "layer_count": "MultiHeadAttention(1600, 1600, 1024, 0.0, 48)",
    "lookalike": "SelfАttention_v1(٣, 2)",
    "literals": "CausalAttention(-(3), 1e9, 0x10, float('nan'), True)",
    "nested": "SelfAttention_v1(((((3)))), ((2)))",
    "strings": "SelfAttention_v1('3', \"2\", d_in=None,)",
    "gqa": "GroupedQueryAttention(768, 768, 0.0, 12, 4, dtype=torch.float32, qkv_bias=True)",
    "gqa_mha_order": "GroupedQueryAttention(768, 768, 1024, 0.0, 12)",
    "swa": "MultiHeadAttentionWithSWA(768, 768, 0.0, 12, sliding_window_size=None)",
}
for name, text in calls.items():
    write("fuzz_call_parser", name, text)


# ---- fuzz_validator: class byte, (kind, value) per slot, options, forward byte, seed ----
CLASSES = ["SelfAttention_v1", "SelfAttention_v2", "CausalAttention", "MultiHeadAttentionWrapper", "MultiHeadAttention", "",
           "MultiheadAttention", "SelfAttention_v3", "GroupedQueryAttention", "MultiHeadAttentionWithSWA"]
SLOTS = ["d_in", "d_out", "context_length", "dropout", "num_heads", "qkv_bias", "n_heads", "bias", "num_kv_groups", "sliding_window_size", "dtype"]


def slot(value):
    if value is None:
        return b"\x00"  # absent
    if isinstance(value, bool):
        return b"\x06" + bytes([int(value)])
    if isinstance(value, int):
        return b"\x01" + struct.pack("<b", value) if -128 <= value < 128 else b"\x02" + struct.pack("<i", value)
    if isinstance(value, float):
        return b"\x04" + struct.pack("<d", value)
    if isinstance(value, str):  # Python literal text
        return b"\x09" + bytes([len(value)]) + value.encode()
    raise TypeError(value)


def setup(cls, forward=0, seed=123, shape=None, **slots):
    out = bytes([CLASSES.index(cls)])
    for name in SLOTS:
        out += slot(slots.get(name))
    if shape is None:
        out += b"\x00"
    else:
        out += bytes([1 | (len(shape) << 2)]) + b"".join(struct.pack("<b", d) for d in shape)
    return out + bytes([forward]) + struct.pack("<I", seed)


TRAIN, RAW = 1, 4
tokens = lambda t: (t - 1) << 3
validator = {
    "book_mha": setup("MultiHeadAttention", tokens(6), d_in=3, d_out=2, context_length=6, dropout=0.0, num_heads=2),
    "mha_train_dropout": setup("MultiHeadAttention", TRAIN | tokens(4) | 64, d_in=4, d_out=4, context_length=6, dropout=0.5, num_heads=2, qkv_bias=True),
    "wrapper": setup("MultiHeadAttentionWrapper", tokens(3), d_in=3, d_out=1, context_length=6, dropout=0.0, num_heads=2),
    "causal_shape": setup("CausalAttention", tokens(5), shape=[1, 6, 3], d_in=3, d_out=2, context_length=6, dropout=0.1),
    "v1": setup("SelfAttention_v1", tokens(6), d_in=3, d_out=2),
    "v2_raw_inputs": setup("SelfAttention_v2", RAW | tokens(2), d_in=2, d_out=2, qkv_bias=True) + struct.pack("<4f", 1.0, float("nan"), -2.0, 3.5),
    "heads_divisibility": setup("MultiHeadAttention", d_in=3, d_out=3, context_length=6, dropout=0.0, num_heads=2),
    "swapped": setup("MultiHeadAttention", d_in=8, d_out=8, context_length=6, dropout=12, num_heads=0.1),
    "too_large": setup("MultiHeadAttention", d_in=100000, d_out=100000, context_length=1024, dropout=0.0, num_heads=10),
    "text_values": setup("CausalAttention", d_in="3.0", d_out="1e9", context_length="0x10", dropout="nan"),
    "aliases": setup("MultiHeadAttention", d_in=4, d_out=4, context_length=4, dropout=0.0, n_heads=2, bias=True),
    "bad_input_shape": setup("CausalAttention", shape=[2, 7, -3, 1], d_in=3, d_out=2, context_length=6, dropout=0.0),
    "gqa_book": setup("GroupedQueryAttention", TRAIN | tokens(6) | 64, d_in=3, d_out=4, dropout=0.5, num_heads=4, num_kv_groups=2),
    "gqa_mha_order": setup("GroupedQueryAttention", d_in=768, d_out=768, dropout=1024, num_heads=0.0, num_kv_groups=12),
    "gqa_groups": setup("GroupedQueryAttention", d_in=8, d_out=8, dropout=0.0, num_heads=4, num_kv_groups=3, dtype="torch.bfloat16"),
    "swa_window": setup("MultiHeadAttentionWithSWA", TRAIN | tokens(7) | 64, d_in=3, d_out=2, dropout=0.1, num_heads=2, sliding_window_size=2),
}
# Input sizes as int64 (options bit 5): 2**32 x 2**32 tokens of width 5.
validator["huge_input_shape"] = (bytes([CLASSES.index("CausalAttention")]) + b"".join(slot(v) for v in [3, 2, 6, 0.0, None, None, None, None, None, None, None])
                                 + bytes([1 | (3 << 2) | 32]) + struct.pack("<3q", 2**32, 2**32, 5) + b"\x00" + struct.pack("<I", 1))
for name, data in validator.items():
    write("fuzz_validator", name, data)


# ---- fuzz_checkpoint_header: small whole safetensors files and real headers ----
def safetensors(tensors, metadata=True):
    """tensors: [(key, dtype, shape, bytes)] written back to back in that order."""
    header, data = {}, b""
    if metadata:
        header["__metadata__"] = {"format": "pt"}
    for key, dtype, shape, raw in tensors:
        header[key] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + data


def f32(n, start=0.0):
    return struct.pack(f"<{n}f", *[(start + i) * 0.01 for i in range(n)])


def gpt2(d, prefix="", bias=True, wpe=True, mask=False, layers=1, dtype="F32", block=False):
    pack = {"F32": lambda n: f32(n), "F16": lambda n: struct.pack(f"<{n}e", *[i * 0.01 for i in range(n)]),
            "F64": lambda n: struct.pack(f"<{n}d", *[i * 0.01 for i in range(n)])}[dtype]
    out = []
    if block:  # what the layer's input needs: token embeddings and ln_1
        out.append((prefix + "wte.weight", "F32", [5, d], f32(5 * d)))
        out.append((prefix + "h.0.ln_1.weight", "F32", [d], f32(d, 100)))
        out.append((prefix + "h.0.ln_1.bias", "F32", [d], f32(d)))
    if wpe:
        out.append((prefix + "wpe.weight", "F32", [8, d], f32(8 * d)))
    for layer in range(layers):
        base = f"{prefix}h.{layer}.attn."
        if mask:
            out.append((base + "bias", "F32", [1, 1, 8, 8], f32(64)))
        out.append((base + "c_attn.weight", dtype, [d, 3 * d], pack(3 * d * d)))
        if bias:
            out.append((base + "c_attn.bias", dtype, [3 * d], pack(3 * d)))
        out.append((base + "c_proj.weight", dtype, [d, d], pack(d * d)))
        out.append((base + "c_proj.bias", dtype, [d], pack(d)))
    return safetensors(out)


checkpoints = {
    "d2_bias_wpe": gpt2(2),
    "d2_with_block_input": gpt2(2, block=True),
    "d4_prefix_two_layers": gpt2(4, prefix="transformer.", layers=2),
    "d2_no_bias": gpt2(2, bias=False),
    "d2_mask_only": gpt2(2, wpe=False, mask=True),
    "d2_f16": gpt2(2, dtype="F16"),
    "d2_f64": gpt2(2, dtype="F64"),
    "d2_nothing_for_context": gpt2(2, wpe=False),
    "overlap": safetensors([("a", "F32", [2], f32(2)), ("b", "F32", [2], f32(2))]).replace(b'"data_offsets":[8,16]', b'"data_offsets":[4,12]'),
    "gpt2_d4_h2_whole": (FIXTURES / "gpt2_d4_h2.safetensors").read_bytes(),
}
for name in ["gpt2_d8_h4_prefix", "gpt2_d8_nobias", "gpt2_d8_nowpe_nomask"]:
    raw = (FIXTURES / f"{name}.safetensors").read_bytes()
    n = struct.unpack("<Q", raw[:8])[0]
    checkpoints[f"{name}_header_only"] = raw[: 8 + n]  # the real header; the data is cut off
checkpoints["not_json"] = (FIXTURES / "not_json.safetensors").read_bytes()
# the bad-file table (duplicate keys, NUL padding, holes in the data section, ...) and the whitespace-padded twin
for name in json.loads((FIXTURES / "expected.json").read_text())["bad_files"]:
    checkpoints["bad_" + name.removesuffix(".safetensors")] = (FIXTURES / name).read_bytes()
checkpoints["whitespace_padded"] = (FIXTURES / "whitespace_padded.safetensors").read_bytes()
for name, data in checkpoints.items():
    write("fuzz_checkpoint_header", name, data)


# ---- fuzz_gpt2_file: whole GPT-2 files by their structure (the byte layout in fuzz_entries.hpp) ----
def gpt2_file(d=8, n_ctx=8, vocab=16, heads=(2, 2), prefix=0, others=None, dtype=0, dtypes=(), blocks=((0,), (0,)),
              values=(0,), ids=(1, 2, 3)):
    out = [(d - 1) % 12, (n_ctx - 1) % 12, (vocab - 1) % 48, *heads, prefix, dtype, *dtypes, len(blocks)]
    for b in blocks:
        out += list(b)
    if others is not None:
        out.append(others)
    out += list(values)
    out += [len(ids) - 1, *ids]
    return bytes(out)


nan = list(struct.pack("<I", 0x7FC00000))
gpt2_files = {
    "two_blocks_metadata_heads": gpt2_file(),
    "prefix_transformer": gpt2_file(prefix=1),
    "gap_0_and_4": gpt2_file(blocks=((0,), (1, 3))),
    "partial_block": gpt2_file(blocks=((0,), (2, 0xC0, 0x0F))),
    "blocks_under_both_prefixes": gpt2_file(prefix=2, others=2),
    "wrong_shape": gpt2_file(blocks=((4, 8),)),
    "mask_buffers": gpt2_file(blocks=((8,), (8,))),
    "overflow_scale_2_127": gpt2_file(values=(1, 127)),
    "overflow_scale_2_100_one_block": gpt2_file(blocks=((0,),), values=(1, 100)),
    "nan_weight": gpt2_file(values=(3, *nan, 5)),
    "f16_overflows_to_inf": gpt2_file(dtype=1, values=(1, 20)),
    "bf16": gpt2_file(dtype=2),
    "f64": gpt2_file(dtype=3),
    "mixed_dtypes": gpt2_file(dtype=4, dtypes=(1, 0), blocks=((0,) + (0,) * 12,), values=(0, 0, 0)),  # F16 wte; ln_f F32
    "heads_option_3": gpt2_file(heads=(1, 3)),
    "heads_text": gpt2_file(heads=(3, 3, *b"two")),
    "no_heads_width_8": gpt2_file(heads=(0,)),
    "tokens_outside_vocab": gpt2_file(ids=(16, 17)),
    "raw_values": gpt2_file(d=2, vocab=4, blocks=((0,),), values=(2,), ids=(1,)) + bytes(range(256)) * 2,
    "no_wte": gpt2_file(prefix=4),
    "no_blocks": gpt2_file(blocks=()),
}
for name, data in gpt2_files.items():
    write("fuzz_gpt2_file", name, data)

print("corpus:", {t.name: len(list(t.iterdir())) for t in sorted((ROOT / "corpus").iterdir())})


# ---- fuzz_torch_save: b"\x00" + a whole torch.save file, or b"\x01" + a data.pkl put in a zip with
# storages archive/data/0 (64 bytes) and archive/data/1 (7 bytes) ----
TORCH_SAVE = ROOT.parent / "fixtures" / "torch_save"
for name in ["pytorch_model_f16.bin", "noncontiguous.bin", "lm_head_tied.bin", "os_system.pth", "builtins_eval.pth", "truncated.bin",
             "lying_offset.bin", "lying_size.bin", "short_storage.bin", "legacy.pth", "legacy_truncated.pth", "legacy_big_endian.pth"]:
    write("fuzz_torch_save", "file_" + name.replace(".", "_"), b"\x00" + (TORCH_SAVE / name).read_bytes())


def tensor_pickle(storage_type, key, numel, offset, size, stride, name="w"):
    """protocol 2: {name: _rebuild_tensor_v2(persistent storage, offset, size, stride, False, OrderedDict())}"""
    def ints(xs):
        return b"(" + b"".join(b"K" + bytes([x]) for x in xs) + b"t"
    pid = b"(X\x07\x00\x00\x00storagectorch\n" + storage_type + b"\nX" + struct.pack("<I", len(key)) + key + b"X\x03\x00\x00\x00cpuK" + bytes([numel]) + b"tQ"
    return (b"\x80\x02ccollections\nOrderedDict\n)Rq\x00X" + struct.pack("<I", len(name)) + name.encode() + b"ctorch._utils\n_rebuild_tensor_v2\n(" + pid +
            b"K" + bytes([offset]) + ints(size) + ints(stride) + b"\x89ccollections\nOrderedDict\n)RtRs.")


pickles = {
    "f32_4x4": tensor_pickle(b"FloatStorage", b"0", 16, 0, [4, 4], [4, 1]),
    "f32_transposed": tensor_pickle(b"FloatStorage", b"0", 16, 0, [4, 4], [1, 4]),
    "f16_offset": tensor_pickle(b"HalfStorage", b"0", 32, 3, [2, 5], [5, 1]),
    "bf16_past_end": tensor_pickle(b"BFloat16Storage", b"0", 32, 30, [2, 2], [2, 1]),
    "f32_short_storage": tensor_pickle(b"FloatStorage", b"1", 4, 0, [4], [1]),
    "missing_storage": tensor_pickle(b"FloatStorage", b"9", 4, 0, [4], [1]),
    "module": b"\x80\x02c__main__\nGPTModel\nq\x00)\x81q\x01}q\x02b.",
    "self_list": b"\x80\x02}q\x00X\x01\x00\x00\x00a]q\x01h\x01as.",
}
for name, data in pickles.items():
    write("fuzz_torch_save", "pickle_" + name, b"\x01" + data)
