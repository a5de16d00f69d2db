"""Decoder-only transformers built op for op the way Hugging Face's
transformers library builds GPT-2 (modeling_gpt2.py) and Llama
(modeling_llama.py), so that autograd saves the same tensors it saves there.

Written here, not copied: the structure (which ops run, in which order, on
which dtypes) follows the library, because the memory a training step takes
is decided by exactly that. Where the library offers choices, the one taken
is named:
  - GPT-2's activation is "gelu_pytorch_tanh" (one fused op), the tanh GELU
    that Hugging Face recommends over the Python-composed "gelu_new";
  - attention is the library's "eager" implementation (torch 1.13 has no
    scaled_dot_product_attention);
  - the loss follows ForCausalLMLoss: logits upcast to fp32, the labels (not
    the logits) shifted, mean cross-entropy with ignore_index -100;
  - the boolean causal mask is made once per length and kept (the library
    keeps it as a buffer); Llama's additive mask is built per forward, as there;
  - gradient checkpointing wraps each block in torch.utils.checkpoint (the
    reentrant variant, the library's default).
LoRA follows peft: y = base(x) + B(A(x)) * alpha/r, A Kaiming-uniform, B zero.
"""
import functools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint



def checkpointed(model, i):
    """Block i (from 0) runs under checkpoint: every one, or every Nth (torchtitan's layer SAC,
    pytorch/torchtitan@01db32e9 torchtitan/distributed/activation_checkpoint.py _apply_layer_sac:
    blocks N, 2N, ... counted from 1)."""
    return model.checkpointing and (i + 1) % model.checkpoint_every == 0

class Conv1D(nn.Module):
    """GPT-2's linear layer: the weight is stored (in, out) and applied with addmm."""

    def __init__(self, n_out, n_in):
        super().__init__()
        self.n_out = n_out
        self.weight = nn.Parameter(torch.empty(n_in, n_out).normal_(std=0.02))
        self.bias = nn.Parameter(torch.zeros(n_out))

    def forward(self, x):
        shape = x.size()[:-1] + (self.n_out,)
        y = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return y.view(shape)


class LoRA(nn.Module):
    """A low-rank adapter around a frozen module (peft's Linear layer)."""

    def __init__(self, base, n_in, n_out, rank, alpha):
        super().__init__()
        self.base = base
        for p in base.parameters():
            p.requires_grad_(False)
        self.lora_A = nn.Linear(n_in, rank, bias=False)
        self.lora_B = nn.Linear(rank, n_out, bias=False)
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)
        self.scaling = alpha / rank

    def forward(self, x):
        return self.base(x) + self.lora_B(self.lora_A(x)) * self.scaling


@functools.lru_cache(maxsize=None)
def causal_mask(t, device):
    """One mask per length, kept like the library's causal-mask buffer (made in the first step)."""
    return torch.ones(t, t, dtype=torch.bool, device=device).tril().view(1, 1, t, t)


def causal_lm_loss(logits, labels):
    """Hugging Face's ForCausalLMLoss: fp32 logits, labels shifted left."""
    logits = logits.float()
    labels = F.pad(labels, (0, 1), value=-100)[..., 1:].contiguous()
    return F.cross_entropy(logits.view(-1, logits.size(-1)), labels.view(-1), ignore_index=-100)


# ----------------------------------------------------------------- GPT-2

class GPT2Attention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c, self.h = cfg["hidden"], cfg["heads"]
        self.d = self.c // self.h
        self.c_attn = Conv1D(3 * self.c, self.c)
        self.c_proj = Conv1D(self.c, self.c)
        self.attn_dropout = nn.Dropout(cfg["dropout"])
        self.resid_dropout = nn.Dropout(cfg["dropout"])

    def forward(self, x):
        b, t, _ = x.shape
        q, k, v = self.c_attn(x).split(self.c, dim=2)
        q = q.view(b, t, self.h, self.d).permute(0, 2, 1, 3)
        k = k.view(b, t, self.h, self.d).permute(0, 2, 1, 3)
        v = v.view(b, t, self.h, self.d).permute(0, 2, 1, 3)
        w = torch.matmul(q, k.transpose(-1, -2))
        w = w / torch.full([], v.size(-1) ** 0.5, dtype=w.dtype, device=w.device)
        mask_value = torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype, device=w.device)
        w = torch.where(causal_mask(t, x.device), w.to(w.dtype), mask_value)
        w = F.softmax(w, dim=-1)
        w = w.type(v.dtype)
        w = self.attn_dropout(w)
        y = torch.matmul(w, v)
        y = y.permute(0, 2, 1, 3).contiguous().view(b, t, self.c)
        return self.resid_dropout(self.c_proj(y))


class GPT2MLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c_fc = Conv1D(cfg["ffn"], cfg["hidden"])
        self.c_proj = Conv1D(cfg["hidden"], cfg["ffn"])
        self.dropout = nn.Dropout(cfg["dropout"])

    def forward(self, x):
        return self.dropout(self.c_proj(F.gelu(self.c_fc(x), approximate="tanh")))


class GPT2Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.ln_1 = nn.LayerNorm(cfg["hidden"], eps=1e-5)
        self.attn = GPT2Attention(cfg)
        self.ln_2 = nn.LayerNorm(cfg["hidden"], eps=1e-5)
        self.mlp = GPT2MLP(cfg)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2LMHeadModel(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.wte = nn.Embedding(cfg["vocab"], cfg["hidden"])
        self.wpe = nn.Embedding(cfg["max_pos"], cfg["hidden"])
        nn.init.normal_(self.wte.weight, std=0.02)
        nn.init.normal_(self.wpe.weight, std=0.01)
        self.drop = nn.Dropout(cfg["dropout"])
        self.h = nn.ModuleList(GPT2Block(cfg) for _ in range(cfg["layers"]))
        self.ln_f = nn.LayerNorm(cfg["hidden"], eps=1e-5)
        self.checkpointing = False
        self.checkpoint_every = 1

    def forward(self, ids, labels):
        pos = torch.arange(ids.size(1), device=ids.device).unsqueeze(0)
        x = self.drop(self.wte(ids) + self.wpe(pos))
        if self.checkpointing and not x.requires_grad:
            x.requires_grad_(True)  # the library's enable_input_require_grads, for frozen bases
        for i, block in enumerate(self.h):
            x = torch.utils.checkpoint.checkpoint(block, x) if checkpointed(self, i) else block(x)
        x = self.ln_f(x)
        logits = F.linear(x, self.wte.weight)  # the head is tied to the embedding
        return causal_lm_loss(logits, labels), logits

    def linears(self):
        """(module owner, attribute, in, out, target name) for LoRA."""
        c, f = self.cfg["hidden"], self.cfg["ffn"]
        for blk in self.h:
            yield blk.attn, "c_attn", c, 3 * c, "qkv"
            yield blk.attn, "c_proj", c, c, "o"
            yield blk.mlp, "c_fc", c, f, "up"
            yield blk.mlp, "c_proj", f, c, "down"


# ----------------------------------------------------------------- Llama

class LlamaRMSNorm(nn.Module):
    def __init__(self, c, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(c))
        self.eps = eps

    def forward(self, x):
        dtype = x.dtype
        x = x.to(torch.float32)
        variance = x.pow(2).mean(-1, keepdim=True)
        x = x * torch.rsqrt(variance + self.eps)
        return self.weight * x.to(dtype)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def repeat_kv(x, n_rep):
    """(b, kv_heads, t, d) -> (b, kv_heads * n_rep, t, d), a copy as in the library."""
    if n_rep == 1:
        return x
    b, kvh, t, d = x.shape
    return x[:, :, None, :, :].expand(b, kvh, n_rep, t, d).reshape(b, kvh * n_rep, t, d)


class LlamaAttention(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.c, self.h, self.kvh = cfg["hidden"], cfg["heads"], cfg["kv_heads"]
        self.d = self.c // self.h
        self.q_proj = nn.Linear(self.c, self.h * self.d, bias=False)
        self.k_proj = nn.Linear(self.c, self.kvh * self.d, bias=False)
        self.v_proj = nn.Linear(self.c, self.kvh * self.d, bias=False)
        self.o_proj = nn.Linear(self.h * self.d, self.c, bias=False)

    def forward(self, x, cos, sin, mask):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.h, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kvh, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kvh, self.d).transpose(1, 2)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        q = (q * cos) + (rotate_half(q) * sin)
        k = (k * cos) + (rotate_half(k) * sin)
        k = repeat_kv(k, self.h // self.kvh)
        v = repeat_kv(v, self.h // self.kvh)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.d)
        w = w + mask
        w = F.softmax(w, dim=-1, dtype=torch.float32).to(q.dtype)
        y = torch.matmul(w, v)
        y = y.transpose(1, 2).contiguous().reshape(b, t, -1)
        return self.o_proj(y)


class LlamaMLP(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        c, f = cfg["hidden"], cfg["ffn"]
        self.gate_proj = nn.Linear(c, f, bias=False)
        self.up_proj = nn.Linear(c, f, bias=False)
        self.down_proj = nn.Linear(f, c, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.input_layernorm = LlamaRMSNorm(cfg["hidden"])
        self.self_attn = LlamaAttention(cfg)
        self.post_attention_layernorm = LlamaRMSNorm(cfg["hidden"])
        self.mlp = LlamaMLP(cfg)

    def forward(self, x, cos, sin, mask):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaForCausalLM(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        c, d = cfg["hidden"], cfg["hidden"] // cfg["heads"]
        self.embed_tokens = nn.Embedding(cfg["vocab"], c)
        nn.init.normal_(self.embed_tokens.weight, std=0.02)
        self.layers = nn.ModuleList(LlamaDecoderLayer(cfg) for _ in range(cfg["layers"]))
        self.norm = LlamaRMSNorm(c)
        self.lm_head = nn.Linear(c, cfg["vocab"], bias=False)
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0, d, 2, dtype=torch.float32) / d))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.checkpointing = False
        self.checkpoint_every = 1

    def rotary(self, b, t):
        pos = torch.arange(t, dtype=torch.float32, device=self.inv_freq.device).view(1, t, 1).expand(b, t, 1)
        freqs = pos * self.inv_freq.view(1, 1, -1)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()

    def forward(self, ids, labels):
        b, t = ids.shape
        x = self.embed_tokens(ids)
        if self.checkpointing and not x.requires_grad:
            x.requires_grad_(True)
        cos, sin = self.rotary(b, t)
        if ids.is_cuda:
            dtype = torch.get_autocast_gpu_dtype() if torch.is_autocast_enabled() else x.dtype
        else:
            dtype = torch.get_autocast_cpu_dtype() if torch.is_autocast_cpu_enabled() else x.dtype
        cos, sin = cos.to(dtype), sin.to(dtype)
        # the library's additive 4-D causal mask, in the attention's dtype
        mask = torch.zeros(1, 1, t, t, dtype=dtype, device=ids.device).masked_fill_(~causal_mask(t, ids.device),
                                                                 torch.finfo(dtype).min)
        for i, layer in enumerate(self.layers):
            if checkpointed(self, i):
                x = torch.utils.checkpoint.checkpoint(layer, x, cos, sin, mask)
            else:
                x = layer(x, cos, sin, mask)
        logits = self.lm_head(self.norm(x))
        return causal_lm_loss(logits, labels), logits

    def linears(self):
        c, f = self.cfg["hidden"], self.cfg["ffn"]
        kv = self.cfg["kv_heads"] * (c // self.cfg["heads"])
        for layer in self.layers:
            a, m = layer.self_attn, layer.mlp
            yield a, "q_proj", c, c, "q"
            yield a, "k_proj", c, kv, "k"
            yield a, "v_proj", c, kv, "v"
            yield a, "o_proj", c, c, "o"
            yield m, "gate_proj", c, f, "gate"
            yield m, "up_proj", c, f, "up"
            yield m, "down_proj", f, c, "down"


def build(cfg):
    model = (GPT2LMHeadModel if cfg["family"] == "gpt2" else LlamaForCausalLM)(cfg)
    if cfg["lora_rank"] > 0:
        for p in model.parameters():
            p.requires_grad_(False)
        groups = {"attn": "q,k,v,o", "mlp": "gate,up,down", "all": "q,k,v,o,gate,up,down"}
        wanted = set(",".join(groups.get(t, t) for t in cfg["lora_targets"].split(",")).split(","))
        for owner, name, n_in, n_out, target in list(model.linears()):
            parts = {"qkv": {"q", "k", "v"}}.get(target, {target})
            if parts & wanted:
                setattr(owner, name, LoRA(getattr(owner, name), n_in, n_out, cfg["lora_rank"],
                                          2 * cfg["lora_rank"]))
    return model
