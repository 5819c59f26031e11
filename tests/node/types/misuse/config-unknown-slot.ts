// Must NOT compile: a slot the class does not have (the core's "unknown_slot") is a type error when the class name is a literal.
import { loadAttentionLab } from "attention-lab";

const lab = await loadAttentionLab();
// expect: 'd_inn' does not exist in type 'MultiHeadAttentionConfig'
lab.create("MultiHeadAttention", { d_inn: 3, d_out: 2, context_length: 6, dropout: 0.0, num_heads: 2 });
// expect: 'qkv_bias' does not exist in type 'SelfAttention_v1Config'
lab.run("SelfAttention_v1", { d_in: 3, d_out: 2, qkv_bias: false }, lab.bookTokens());
// expect: 'context_length' does not exist in type 'MultiHeadAttentionWithSWAConfig'
lab.describe("MultiHeadAttentionWithSWA", { d_in: 8, d_out: 8, context_length: 6, dropout: 0.0, num_heads: 2 });
