// Must NOT compile: a value of the wrong type for its slot (the core's "wrong_type", "bool_as_int", "dtype").
import { loadAttentionLab } from "attention-lab";

const lab = await loadAttentionLab();
// expect: Type '"two"' is not assignable to type 'IntSlotValue'
lab.create("MultiHeadAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: "two" });
// expect: Type 'number' is not assignable to type 'BoolSlotValue
lab.check("SelfAttention_v2", { d_in: 3, d_out: 2, qkv_bias: 1 });
// expect: Type '"torch.bfloat16"' is not assignable to type 'DtypeSlotValue
lab.describe("GroupedQueryAttention", { d_in: 8, d_out: 8, dropout: 0.0, num_heads: 4, num_kv_groups: 2, dtype: "torch.bfloat16" });
