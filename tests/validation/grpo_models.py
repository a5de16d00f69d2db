"""The two forwards GRPO needs from hfmodels' GPT-2 and Llama, written around their modules
(hfmodels.py itself is left as it is, so pairwise.py and harness.py measure what they measured):

  forward(model, ids, logits_to_keep)
      the training and log-prob forward: the same ops, in the same order, as hfmodels' own forward
      (so autograd saves the same tensors, checkpointing included), except that the LM head runs on
      the last logits_to_keep hidden states only, as transformers' LlamaForCausalLM does with
      logits_to_keep: `slice_indices = slice(-logits_to_keep, None)`,
      `logits = self.lm_head(hidden_states[:, slice_indices, :])` (after the final norm, which runs
      on every position). No loss is computed: TRL calls the model without labels.
  forward_cached(model, ids, cache, attention_mask)
      one step of transformers' generate with a DynamicCache (prefill or decode): the blocks take
      only the new tokens, each attention appends its keys and values to its layer of the cache and
      attends over everything cached; logits for the last position only (generate sets
      logits_to_keep=1 when the model supports it). Eager attention with the 4-D additive mask
      (rows, 1, new, cached + new) made from the 2-D attention mask, in the attention's dtype.

DynamicCache is transformers' (src/transformers/cache_utils.py, DynamicLayer.update, read at
huggingface/transformers@004999d972e478164dd7e8e508350937c803531e): per layer, keys and values of
shape (rows, kv_heads, length, head_dim), lazily started as empty tensors and grown with
`self.keys = torch.cat([self.keys, key_states], dim=-2)` (likewise values) at every forward, so
each step allocates the grown tensors before the old ones are freed. Llama caches the keys after
the rotary embedding and before repeat_kv (kv_heads, not heads), as LlamaAttention does.
"""
import math

import torch
import torch.nn.functional as F
import torch.utils.checkpoint

import hfmodels


class DynamicLayer:
    """transformers' DynamicLayer: keys/values grown by torch.cat along the sequence dimension."""

    def __init__(self):
        self.keys = None
        self.values = None

    def update(self, key_states, value_states):
        if self.keys is None:  # lazy_initialization: empty tensors of the states' dtype
            self.keys = torch.tensor([], dtype=key_states.dtype, device=key_states.device)
            self.values = torch.tensor([], dtype=value_states.dtype, device=value_states.device)
        self.keys = torch.cat([self.keys, key_states], dim=-2)
        self.values = torch.cat([self.values, value_states], dim=-2)
        return self.keys, self.values

    def length(self):
        return 0 if self.keys is None or self.keys.numel() == 0 else self.keys.shape[-2]


class DynamicCache:
    def __init__(self, layers):
        self.layers = [DynamicLayer() for _ in range(layers)]

    def length(self):
        return self.layers[0].length()

    def nbytes(self):
        return sum(t.numel() * t.element_size() for layer in self.layers for t in (layer.keys, layer.values)
                   if t is not None)


def _autocast_dtype(x):
    if x.is_cuda:
        return torch.get_autocast_gpu_dtype() if torch.is_autocast_enabled() else x.dtype
    return torch.get_autocast_cpu_dtype() if torch.is_autocast_cpu_enabled() else x.dtype


def _additive_mask(attention_mask, q_len, dtype):
    """(rows, 1, q_len, kv_len): 0 where a query may attend (causal and not padding), the dtype's minimum
    elsewhere; the queries are the last q_len positions."""
    rows, kv_len = attention_mask.shape
    q_pos = torch.arange(kv_len - q_len, kv_len, device=attention_mask.device).view(1, 1, q_len, 1)
    kv_pos = torch.arange(kv_len, device=attention_mask.device).view(1, 1, 1, kv_len)
    allowed = (kv_pos <= q_pos) & attention_mask.bool().view(rows, 1, 1, kv_len)
    zero = torch.zeros([], dtype=dtype, device=attention_mask.device)
    return torch.where(allowed, zero, torch.full([], torch.finfo(dtype).min, dtype=dtype,
                                                   device=attention_mask.device))


# ------------------------------------------------------------- training / log-prob forward

def forward(model, ids, logits_to_keep=0):
    """hfmodels' forward without the loss, the LM head on the last logits_to_keep positions (0: all)."""
    if isinstance(model, hfmodels.LlamaForCausalLM):
        h = _llama_hidden(model, ids)
    else:
        h = _gpt2_hidden(model, ids)
    if logits_to_keep:
        h = h[:, -logits_to_keep:, :]
    head = model.lm_head if isinstance(model, hfmodels.LlamaForCausalLM) else None
    return head(h) if head is not None else F.linear(h, model.wte.weight)


def _llama_hidden(model, ids):
    """hfmodels.LlamaForCausalLM.forward up to and including the final norm, op for op."""
    b, t = ids.shape
    x = model.embed_tokens(ids)
    if model.checkpointing and not x.requires_grad:
        x.requires_grad_(True)
    cos, sin = model.rotary(b, t)
    dtype = _autocast_dtype(x)
    cos, sin = cos.to(dtype), sin.to(dtype)
    mask = torch.zeros(1, 1, t, t, dtype=dtype, device=ids.device).masked_fill_(
        ~hfmodels.causal_mask(t, ids.device), torch.finfo(dtype).min)
    for i, layer in enumerate(model.layers):
        if hfmodels.checkpointed(model, i):
            x = torch.utils.checkpoint.checkpoint(layer, x, cos, sin, mask)
        else:
            x = layer(x, cos, sin, mask)
    return model.norm(x)


def _gpt2_hidden(model, ids):
    """hfmodels.GPT2LMHeadModel.forward up to and including ln_f, op for op."""
    pos = torch.arange(ids.size(1), device=ids.device).unsqueeze(0)
    x = model.drop(model.wte(ids) + model.wpe(pos))
    if model.checkpointing and not x.requires_grad:
        x.requires_grad_(True)
    for i, block in enumerate(model.h):
        x = torch.utils.checkpoint.checkpoint(block, x) if hfmodels.checkpointed(model, i) else block(x)
    return model.ln_f(x)


# ------------------------------------------------------------- generation forward (with a cache)

def forward_cached(model, ids, cache, attention_mask):
    """One generate step: ids are the new tokens (the prompt at prefill, one token after), the cache
    holds the earlier ones; returns the logits of the last position, (rows, 1, vocab)."""
    if isinstance(model, hfmodels.LlamaForCausalLM):
        h = _llama_cached(model, ids, cache, attention_mask)
        return model.lm_head(h[:, -1:, :])
    h = _gpt2_cached(model, ids, cache, attention_mask)
    return F.linear(h[:, -1:, :], model.wte.weight)


def _llama_cached(model, ids, cache, attention_mask):
    b, q = ids.shape
    past = cache.length()
    x = model.embed_tokens(ids)
    # rotary at the positions past .. past+q-1 (cache_position), as LlamaRotaryEmbedding computes them
    pos = torch.arange(past, past + q, dtype=torch.float32, device=ids.device).view(1, q, 1).expand(b, q, 1)
    freqs = pos * model.inv_freq.view(1, 1, -1)
    emb = torch.cat((freqs, freqs), dim=-1)
    dtype = _autocast_dtype(x)
    cos, sin = emb.cos().to(dtype), emb.sin().to(dtype)  # hfmodels' choice: the attention's dtype
    mask = _additive_mask(attention_mask, q, dtype)
    for layer, kv in zip(model.layers, cache.layers):
        x = x + _llama_attention_cached(layer.self_attn, layer.input_layernorm(x), cos, sin, mask, kv)
        x = x + layer.mlp(layer.post_attention_layernorm(x))
    return model.norm(x)


def _llama_attention_cached(a, x, cos, sin, mask, kv):
    """transformers' LlamaAttention.forward with past_key_values and eager_attention_forward."""
    b, t, _ = x.shape
    q = a.q_proj(x).view(b, t, a.h, a.d).transpose(1, 2)
    k = a.k_proj(x).view(b, t, a.kvh, a.d).transpose(1, 2)
    v = a.v_proj(x).view(b, t, a.kvh, a.d).transpose(1, 2)
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
    q = (q * cos) + (hfmodels.rotate_half(q) * sin)
    k = (k * cos) + (hfmodels.rotate_half(k) * sin)
    k, v = kv.update(k, v)  # the cache keeps kv_heads; repeat_kv copies after it
    k = hfmodels.repeat_kv(k, a.h // a.kvh)
    v = hfmodels.repeat_kv(v, a.h // a.kvh)
    w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(a.d)
    w = w + mask
    w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
    y = torch.matmul(w, v)
    y = y.transpose(1, 2).contiguous().reshape(b, t, -1)
    return a.o_proj(y)


def _gpt2_cached(model, ids, cache, attention_mask):
    b, q = ids.shape
    past = cache.length()
    pos = torch.arange(past, past + q, device=ids.device).unsqueeze(0)
    x = model.drop(model.wte(ids) + model.wpe(pos))
    dtype = _autocast_dtype(x)
    mask = _additive_mask(attention_mask, q, dtype)
    for block, kv in zip(model.h, cache.layers):
        x = x + _gpt2_attention_cached(block.attn, block.ln_1(x), mask, kv)
        x = x + block.mlp(block.ln_2(x))
    return model.ln_f(x)


def _gpt2_attention_cached(a, x, mask, kv):
    """transformers' GPT2Attention.forward with past_key_values and its eager_attention_forward."""
    b, t, _ = x.shape
    q, k, v = a.c_attn(x).split(a.c, dim=2)
    q = q.view(b, t, a.h, a.d).permute(0, 2, 1, 3)
    k = k.view(b, t, a.h, a.d).permute(0, 2, 1, 3)
    v = v.view(b, t, a.h, a.d).permute(0, 2, 1, 3)
    k, v = kv.update(k, v)
    w = torch.matmul(q, k.transpose(-1, -2))
    w = w / torch.full([], v.size(-1) ** 0.5, dtype=w.dtype, device=w.device)
    w = w + mask.to(w.dtype)
    w = F.softmax(w, dim=-1)
    w = w.type(v.dtype)
    w = a.attn_dropout(w)
    y = torch.matmul(w, v)
    y = y.permute(0, 2, 1, 3).contiguous().view(b, t, a.c)
    return a.resid_dropout(a.c_proj(y))
