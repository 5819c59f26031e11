// Must NOT compile: a required slot left out (the core's "missing_slot") is a type error when the class name is a literal.
import { loadAttentionLab } from "attention-lab";

const lab = await loadAttentionLab();
// expect: Property 'num_heads' is missing in type .* but required in type 'MultiHeadAttentionConfig'
lab.create("MultiHeadAttention", { d_in: 3, d_out: 2, context_length: 6, dropout: 0.0 });
// expect: Property 'dropout' is missing in type .* but required in type 'CausalAttentionConfig'
lab.setup("CausalAttention", { d_in: 3, d_out: 2, context_length: 6 }, { inputShape: [1, 6, 3] });
// expect: Property 'num_kv_groups' is missing in type .* but required in type 'GroupedQueryAttentionConfig'
lab.estimateBytes("GroupedQueryAttention", { d_in: 8, d_out: 8, dropout: 0.0, num_heads: 4 }, [1, 6, 8]);
