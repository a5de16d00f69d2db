#!/usr/bin/env python3
"""What LitGPT's LoRA fine-tuning keeps per layer on a CUDA GPU: a census.

  litgpt_probe.py OUT.json [CASE ...]

LitGPT is not installed on the GPU machines this project is lent, so this file
rebuilds the autograd-relevant path of its Llama-family model in a few lines:
the same operations, in the same order, on tensors of the same shapes, dtypes
and layouts, as read in Lightning-AI/litgpt@01fe959c5f43 (the commit whose
finetune/lora.py printed the config hub's 'Peak memory' figures):
  litgpt/model.py  GPT.forward (wte, blocks, ln_f, lm_head in chunks of
                   lm_head_chunk_size positions), Block.forward (non-parallel
                   residual), CausalSelfAttention.forward (one fused qkv in
                   LitGPT's per-group layout [q.. k v], view/permute/split,
                   K and V expanded then reshaped only for grouped heads,
                   apply_rope on the first rope_n_elem channels, cat, SDPA
                   is_causal, transpose, reshape, proj), RMSNorm (float(),
                   mean of squares, rsqrt, times the weight, back to the
                   input's dtype), LLaMAMLP (silu(fc_1) * fc_2, proj),
                   build_rope_cache (fp32; GPT.max_seq_length's setter rebuilds
                   it after Fabric's bf16 conversion, so it stays fp32);
  litgpt/lora.py   LoRAQKVLinear.forward (pretrained + zero_pad(conv1d(
                   lora_A(dropout(x)))) * scaling), lora_ind, zero_pad, conv1d
                   (grouped conv1d for multi-head, chunk + cat otherwise);
  litgpt/utils.py  chunked_cross_entropy (one cross_entropy per logit chunk);
  Fabric's bf16-true precision hands the chunks back in fp32 (convert_output).

For each case it prints and writes, from the real CUDA kernels of the torch
installed: every tensor the autograd graph saves (found by walking the graph
from the loss; storages counted once, parameters and buffers left out),
grouped by the node that saves it and by layer, and torch.cuda's allocated
bytes before the forward, after the loss and at the backward's peak, for two
depths, whose difference is what one layer adds. Nothing here reads memplan.
"""
import json
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

CASES = {
    # name: dims of the Hugging Face config.json (as LitGPT's config.py names them), batch, seq, LoRA
    # on q and v (rank, dropout; r=0: full fine-tuning, every weight trained)
    "llama2-7b-mha-b1-t1304": dict(C=4096, H=32, G=32, I=11008, V=32000, B=1, T=1304, r=8, drop=0.05),
    "llama2-7b-mha-b2-t512": dict(C=4096, H=32, G=32, I=11008, V=32000, B=2, T=512, r=8, drop=0.05),
    "llama2-7b-mha-b2-t512-nodrop": dict(C=4096, H=32, G=32, I=11008, V=32000, B=2, T=512, r=8, drop=0.0),
    "mistral-7b-gqa-b2-t512": dict(C=4096, H=32, G=8, I=14336, V=32000, B=2, T=512, r=8, drop=0.05),
    "llama3-8b-gqa-b2-t512": dict(C=4096, H=32, G=8, I=14336, V=128256, B=2, T=512, r=8, drop=0.05),
    # phi-1_5: LayerNorm, GptNeoxMLP (gelu tanh), parallel residual with one shared norm, half the
    # channels rotated, biases; stablelm-base-alpha-3b: the same with two norms, a quarter rotated
    "phi-1.5-b2-t512": dict(C=2048, H=32, G=32, I=8192, V=51200, B=2, T=512, r=8, drop=0.05, norm="ln",
                            mlp="neox", gelu="tanh", parallel=True, shared_norm=True, rope=0.5, bias=True),
    "stablelm-3b-b2-t512": dict(C=4096, H=32, G=32, I=16384, V=50688, B=2, T=512, r=8, drop=0.05, norm="ln",
                                mlp="neox", gelu="none", parallel=True, shared_norm=False, rope=0.25, bias=True),
    "tinyllama-full-b2-t512": dict(C=2048, H=32, G=4, I=5632, V=32000, B=2, T=512, r=0, drop=0.0),
}
DEV = "cuda"
DT = torch.bfloat16
if "--cpu-smoke" in sys.argv:  # a syntax and shape check on a machine without a GPU (fp32, math attention)
    sys.argv.remove("--cpu-smoke")
    DEV, DT = "cpu", torch.float32
    for k in CASES:
        CASES[k].update(C=256, H=8, G=8 if CASES[k]["G"] == 32 else 2, I=688, V=1000, T=300)
    for fn in ("synchronize", "reset_peak_memory_stats", "empty_cache"):
        setattr(torch.cuda, fn, lambda *a: None)
    for fn in ("memory_allocated", "max_memory_allocated"):
        setattr(torch.cuda, fn, lambda *a: 0)
    torch.cuda.get_device_name = lambda *a: "cpu"
    if not hasattr(F, "scaled_dot_product_attention"):
        def sdpa(q, k, v, attn_mask=None, dropout_p=0.0, scale=None, is_causal=False):
            s = (q @ k.transpose(-2, -1)) * scale
            s = s.masked_fill(torch.ones(s.shape[-2:], dtype=torch.bool).triu(1), float("-inf"))
            return s.softmax(-1) @ v
        F.scaled_dot_product_attention = sdpa


def storage(t):
    return t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()


class RMSNorm(nn.Module):
    def __init__(self, C, train=False):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(C, device=DEV, dtype=DT), requires_grad=train)

    def forward(self, x):
        dtype = x.dtype
        x = x.float()
        ms = torch.mean(x * x, dim=-1, keepdim=True)
        xn = x * torch.rsqrt(ms + 1e-5)
        return (xn * self.weight.float()).to(dtype=dtype)


def norm(c):
    if c.get("norm") == "ln":
        ln = nn.LayerNorm(c["C"], device=DEV, dtype=DT)
        ln.requires_grad_(c["r"] == 0)
        return ln
    return RMSNorm(c["C"], train=c["r"] == 0)


def frozen_linear(i, o, c=None):
    """A base linear: frozen under LoRA, trained in full fine-tuning (r=0)."""
    c = c or {}
    lin = nn.Linear(i, o, bias=c.get("bias", False), device=DEV, dtype=DT)
    lin.requires_grad_(c.get("r", 8) == 0)
    return lin


class QKV(nn.Module):
    """Fused qkv with LoRA on q and v (LoRAQKVLinear, enable_lora=(True, False, True))."""

    def __init__(self, c):
        super().__init__()
        C, H, G, hs, r = c["C"], c["H"], c["G"], c["C"] // c["H"], c["r"]
        self.hs, self.H, self.G = hs, H, G
        out = (H + 2 * G) * hs
        self.linear = frozen_linear(C, out, c)
        self.r = r
        if r == 0:
            return
        self.qkv_shapes = (H * hs, G * hs)  # q and v enabled
        self.lora_A = nn.Parameter(torch.randn(r * 2, C, device=DEV, dtype=DT) * 0.01)
        self.lora_B = nn.Parameter(torch.zeros(sum(self.qkv_shapes), r, device=DEV, dtype=DT))
        self.dropout = nn.Dropout(c["drop"]) if c["drop"] > 0 else nn.Identity()
        self.scaling = 16 / r
        total = H // G + 2
        q_ind = [x for x in range(out) if (x // hs) % total < total - 2]
        v_ind = [x for x in range(out) if (x // hs) % total == total - 1]
        self.lora_ind = torch.tensor(q_ind + v_ind, device=DEV)
        self.out = out

    def conv1d(self, inp, w):
        if self.H == self.G:
            return F.conv1d(inp, w, groups=2)
        parts = inp.chunk(2, dim=1)
        ws = w.split(self.qkv_shapes)
        return torch.cat([F.conv1d(a, b) for a, b in zip(parts, ws)], dim=1)

    def zero_pad(self, x):
        x = x.transpose(0, 1)
        res = x.new_zeros((*x.shape[:-1], self.out)).view(-1, self.out)
        res = res.index_copy(1, self.lora_ind, x.reshape(-1, sum(self.qkv_shapes)))
        return res.view((*x.shape[:-1], self.out)).transpose(0, 1)

    def forward(self, x):
        pretrained = self.linear(x)
        if self.r == 0:
            return pretrained
        after_A = F.linear(self.dropout(x), self.lora_A)
        after_B = self.conv1d(after_A.transpose(-2, -1), self.lora_B.unsqueeze(-1)).transpose(-2, -1)
        return pretrained + self.zero_pad(after_B) * self.scaling


def apply_rope(x, cos, sin):
    hs = x.size(-1)
    x1, x2 = x[..., : hs // 2], x[..., hs // 2:]
    rotated = torch.cat((-x2, x1), dim=-1)
    return ((x * cos) + (rotated * sin)).to(dtype=x.dtype)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.attn = QKV(c)
        self.proj = frozen_linear(c["C"], c["C"], c)
        self.H, self.G, self.hs = c["H"], c["G"], c["C"] // c["H"]
        self.n_elem = int(c.get("rope", 1.0) * self.hs)  # rope_n_elem

    def forward(self, x, cos, sin):
        B, T, C = x.shape
        qkv = self.attn(x)
        q_per_kv = self.H // self.G
        qkv = qkv.view(B, T, self.G, q_per_kv + 2, self.hs).permute(0, 2, 3, 1, 4)
        q, k, v = qkv.split((q_per_kv, 1, 1), dim=2)
        if self.G != self.H:
            k = k.expand(B, self.G, q_per_kv, T, self.hs)
            v = v.expand(B, self.G, q_per_kv, T, self.hs)
        q = q.reshape(B, -1, T, self.hs)
        k = k.reshape(B, -1, T, self.hs)
        v = v.reshape(B, -1, T, self.hs)
        n = self.n_elem
        q = torch.cat((apply_rope(q[..., :n], cos, sin), q[..., n:]), dim=-1)
        k = torch.cat((apply_rope(k[..., :n], cos, sin), k[..., n:]), dim=-1)
        y = F.scaled_dot_product_attention(q, k, v, attn_mask=None, dropout_p=0.0,
                                           scale=1.0 / math.sqrt(self.hs), is_causal=True)
        y = y.transpose(1, 2).reshape(B, T, C)
        return self.proj(y)


class Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.norm_1 = norm(c)
        self.norm_2 = None if c.get("shared_norm") else norm(c)
        self.attn = Attention(c)
        if c.get("mlp") == "neox":  # GptNeoxMLP: fc, gelu, proj
            self.fc = frozen_linear(c["C"], c["I"], c)
        else:  # LLaMAMLP: silu(fc_1) * fc_2, proj
            self.fc_1, self.fc_2 = frozen_linear(c["C"], c["I"], c), frozen_linear(c["C"], c["I"], c)
        self.proj = frozen_linear(c["I"], c["C"], c)

    def mlp(self, h):
        if self.c.get("mlp") == "neox":
            return self.proj(F.gelu(self.fc(h), approximate=self.c["gelu"]))
        return self.proj(F.silu(self.fc_1(h)) * self.fc_2(h))

    def forward(self, x, cos, sin):
        x_normed = self.norm_1(x)
        attn = self.attn(x_normed, cos, sin)
        if self.c.get("parallel"):
            h = x_normed if self.norm_2 is None else self.norm_2(x)
            return self.mlp(h) + attn + x
        x = attn + x
        return self.mlp(self.norm_2(x)) + x


class GPT(nn.Module):
    def __init__(self, c, layers):
        super().__init__()
        self.wte = nn.Embedding(c["V"], c["C"], device=DEV, dtype=DT)
        self.wte.weight.requires_grad_(False)
        self.h = nn.ModuleList(Block(c) for _ in range(layers))
        self.wte.weight.requires_grad_(c["r"] == 0)
        self.ln_f = norm(c)
        self.lm_head = frozen_linear(c["C"], c["V"], dict(c, bias=c.get("bias", False)))
        n = int(c.get("rope", 1.0) * (c["C"] // c["H"]))
        theta = 1.0 / (10000 ** (torch.arange(0, n, 2, device=DEV).float() / n))
        idx = torch.outer(torch.arange(c["T"], device=DEV).float(), theta).repeat(1, 2)
        self.register_buffer("cos", torch.cos(idx), persistent=False)
        self.register_buffer("sin", torch.sin(idx), persistent=False)

    def forward(self, idx, chunk=128):
        T = idx.size(1)
        cos, sin = self.cos[:T].unsqueeze(0), self.sin[:T].unsqueeze(0)
        x = self.wte(idx)
        for blk in self.h:
            x = blk(x, cos, sin)
        x = self.ln_f(x)
        return [self.lm_head(xi).float() for xi in x.split(chunk, dim=1)]


def chunked_ce(logits, targets):
    lc = [l.reshape(-1, l.size(-1)) for l in logits]
    tc = [t.reshape(-1) for t in targets.split(logits[0].size(1), dim=1)]
    losses = [F.cross_entropy(l, t, ignore_index=-100, reduction="none") for l, t in zip(lc, tc)]
    n = (targets != -100).sum()
    return torch.cat(losses).sum() / n.maximum(torch.ones_like(n))


def census(loss, model, layer_of):
    """Every saved tensor reachable from the loss: node name, attribute, shape, dtype, storage."""
    skip = {storage(p).data_ptr() for p in model.parameters()}
    skip |= {storage(b).data_ptr() for b in model.buffers()}
    seen_nodes, stack, storages = set(), [loss.grad_fn], {}
    while stack:
        node = stack.pop()
        if node is None or node in seen_nodes:
            continue
        seen_nodes.add(node)
        for name in dir(node):
            if not name.startswith("_saved_"):
                continue
            try:
                val = getattr(node, name)
            except Exception:
                continue
            for t in (val if isinstance(val, (tuple, list)) else (val,)):
                if not isinstance(t, torch.Tensor) or t.device.type != DEV:
                    continue
                s = storage(t)
                ptr = s.data_ptr()
                if ptr in skip or ptr == 0:
                    continue
                entry = storages.setdefault(ptr, {"bytes": s.nbytes(), "savers": []})
                entry["savers"].append("%s.%s %s %s" % (node.name(), name[7:], tuple(t.shape),
                                                        str(t.dtype).replace("torch.", "")))
        stack.extend(fn for fn, _ in node.next_functions)
    for ptr, e in storages.items():
        e["layer"] = layer_of(ptr)
    return storages


def unsaved_blocks(model, saved, logits):
    """Allocator blocks alive after the loss that hold no saved tensor, no parameter
    or buffer and no logit chunk: what a step holds beyond the autograd graph.
    Grouped by size, with the Python line that allocated them."""
    if DEV != "cuda":
        return []
    known = set(saved) | {storage(p).data_ptr() for p in model.parameters()}
    known |= {storage(b).data_ptr() for b in model.buffers()} | {storage(t).data_ptr() for t in logits}
    groups = {}
    for seg in torch.cuda.memory_snapshot():
        addr = seg["address"]
        for blk in seg["blocks"]:
            if blk["state"] == "active_allocated" and addr not in known:
                where = "?"
                for fr in blk.get("frames", []):
                    if fr.get("filename", "").endswith("litgpt_probe.py"):
                        where = "%s:%s" % (fr.get("name"), fr.get("line"))
                        break
                key = (blk.get("requested_size", blk["size"]), where)
                groups[key] = groups.get(key, 0) + 1
            addr += blk["size"]
    return [{"bytes": k[0], "count": n, "where": k[1]} for k, n in sorted(groups.items(), key=lambda kv: -kv[0][0] * kv[1])]


def run_case(c, layers):
    torch.manual_seed(0)
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    model = GPT(c, layers)
    idx = torch.randint(0, c["V"], (c["B"], c["T"]), device=DEV)
    targets = idx.clone()
    torch.cuda.synchronize()
    before = torch.cuda.memory_allocated()
    # Which layer saved a storage first: set by each block's forward pre-hook.
    ptr_layer = {}
    layer_now = {"i": "embed"}
    hooks = []
    for i, blk in enumerate(model.h):
        hooks.append(blk.register_forward_pre_hook(lambda m, a, i=i: layer_now.__setitem__("i", i)))
    hooks.append(model.ln_f.register_forward_pre_hook(lambda m, a: layer_now.__setitem__("i", "head")))

    def pack(t):
        if t.device.type == DEV:
            ptr_layer.setdefault(storage(t).data_ptr(), layer_now["i"])
        return t

    if layers == 4 and DEV == "cuda":
        torch.cuda.memory._record_memory_history(max_entries=200000)
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        logits = model(idx)
    logits[-1] = logits[-1][..., :-1, :]
    loss = chunked_ce(logits, targets[..., 1:])
    torch.cuda.synchronize()
    after_loss = torch.cuda.memory_allocated()
    peak_fwd = torch.cuda.max_memory_allocated()
    saved = census(loss, model, lambda p: ptr_layer.get(p, "loss"))
    unsaved = unsaved_blocks(model, saved, logits) if layers == 4 else []
    torch.cuda.reset_peak_memory_stats()
    loss.backward()
    torch.cuda.synchronize()
    peak_bwd = torch.cuda.max_memory_allocated()
    for h in hooks:
        h.remove()
    if layers == 4 and DEV == "cuda":
        torch.cuda.memory._record_memory_history(enabled=None)
    out = {"layers": layers, "weights_and_inputs": before, "after_loss": after_loss,
           "forward_peak": peak_fwd, "backward_peak": peak_bwd,
           "after_backward": torch.cuda.memory_allocated()}
    per_layer = {}
    for e in saved.values():
        key = str(e["layer"])
        per_layer.setdefault(key, {"bytes": 0, "tensors": []})
        per_layer[key]["bytes"] += e["bytes"]
        per_layer[key]["tensors"].append({"bytes": e["bytes"], "savers": e["savers"]})
    out["saved_bytes_by_layer"] = {k: v["bytes"] for k, v in per_layer.items()}
    out["layer1_tensors"] = sorted(per_layer.get("1", {"tensors": []})["tensors"], key=lambda t: -t["bytes"])
    out["unsaved_live_blocks"] = unsaved
    del loss, logits, saved, model
    return out


def main():
    out_path = sys.argv[1]
    names = sys.argv[2:] or list(CASES)
    result = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "sdpa_backends": {"flash": getattr(torch.backends.cuda, "flash_sdp_enabled", lambda: None)(),
                                "mem_efficient": getattr(torch.backends.cuda, "mem_efficient_sdp_enabled",
                                                         lambda: None)(),
                                "cudnn": getattr(torch.backends.cuda, "cudnn_sdp_enabled", lambda: None)()},
              "cases": {}}
    # cuBLAS's workspace comes from the allocator at the first matmul: take it before any case.
    torch.ones(8, 8, device=DEV, dtype=DT) @ torch.ones(8, 8, device=DEV, dtype=DT)
    for name in names:
        c = CASES[name]
        t0 = time.time()
        a, b = run_case(c, 2), run_case(c, 4)
        tok = c["B"] * c["T"]
        slope = (b["after_loss"] - b["weights_and_inputs"] - (a["after_loss"] - a["weights_and_inputs"])) / 2
        l1 = b["saved_bytes_by_layer"].get("1", 0)
        result["cases"][name] = {"dims": c, "depth2": a, "depth4": b, "allocated_per_layer": slope,
                                 "saved_per_layer_census": l1}
        print("== %s (%.0f s)  per layer: allocated %d B = %.3f B/(token*hidden); census of layer 1 %d B = %.3f"
              % (name, time.time() - t0, slope, slope / tok / c["C"], l1, l1 / tok / c["C"]))
        for t in b["layer1_tensors"]:
            print("   %12d B %6.3f  %s" % (t["bytes"], t["bytes"] / tok / c["C"], " | ".join(t["savers"][:3])))
        print("   saved by layer: %s" % b["saved_bytes_by_layer"])
        for u in b["unsaved_live_blocks"][:12]:
            print("   unsaved live: %d x %d B at %s" % (u["count"], u["bytes"], u["where"]))
        print("   depth4: before %d after_loss %d fwd_peak %d bwd_peak %d" % (
            b["weights_and_inputs"], b["after_loss"], b["forward_peak"], b["backward_peak"]))
        sys.stdout.flush()
    with open(out_path, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
