#!/usr/bin/env python3
"""torchtune's Llama 3.2 3B "Optimization flags" steps, rebuilt and measured on a CUDA GPU.

  torchtune_probe.py OUT.json [CASE ...]     every case (or those named), one process each
  torchtune_probe.py --case CASE OUT.json    one case in this process (what the driver runs)

torchtune is not installed on the GPU machines this project is lent, so this
file rebuilds the path autograd and the allocator see in the recipes whose
figures torchtune's README prints (pytorch/torchtune@a9ea6d5bf023 README.md,
"Optimization flags": Llama 3.2 3B, batch 2, sequence 4096 packed, bf16), from
the modules as read in pytorch/torchtune:
  torchtune/modules/transformer.py   TransformerSelfAttentionLayer (sa_norm,
      attention, residual, mlp_norm, mlp, residual); TransformerDecoder
      (tok_embeddings, layers, norm, then output(h).float() over every
      position, or chunked_output: output applied to each of num_output_chunks
      pieces of the final hidden state, every chunk returned in a list);
  torchtune/modules/attention.py     MultiHeadAttention (q/k/v projections,
      rotary on q and k, K and V expanded to the query heads before SDPA,
      transpose, contiguous, output_proj);
  torchtune/modules/rms_norm.py      RMSNorm (x.float(), mean of squares,
      rsqrt, type_as, times scale);
  torchtune/modules/feed_forward.py  FeedForward (w2(silu(w1 x) * w3 x));
  torchtune/models/llama3_1/_position_embeddings.py  Llama3ScaledRoPE.forward
      (x.float() in pairs against an fp32 cache, stack, flatten, type_as);
  torchtune/modules/tied_linear.py   TiedLinear (the output reads the token
      embedding's weight: Llama 3.2 ties them);
  torchtune/modules/peft/lora.py     LoRALinear (frozen base F.linear, plus
      alpha/rank * lora_b(lora_a(x)); dropout 0 is nn.Identity);
  torchtune/modules/loss/ce_chunked_output_loss.py  CEWithChunkedOutputLoss
      (one F.cross_entropy(chunk.float(), reduction="sum") per chunk);
  torchtune/training/_compile.py     compile_model (each layer compiled on its
      own) and compile_loss (the loss module, or compute_cross_entropy alone
      for the chunked loss);
  torchtune/training/_activation_checkpointing.py  set_activation_checkpointing
      (each TransformerSelfAttentionLayer wrapped, non-reentrant checkpoint);
  torchtune/training/_optimizer_in_backward (register_optim_in_bwd_hooks): one
      optimizer per parameter, stepped and zeroed from the parameter's
      post-accumulate-grad hook;
  recipes/full_finetune_single_device.py, lora_finetune_single_device.py
      (logits = model(...); loss = loss_fn(logits, labels); del logits;
      loss.backward(); optimizer.step(); zero_grad(set_to_none=True)).
The optimizer is torch.optim.AdamW(fused=True) on bf16 parameters.
Attention: the packed rows ran FlexAttention with a block-causal mask; here one
4096-token causal sequence per row runs SDPA's flash kernel, which keeps the
same tensors (q, k, v, output and the log-sum-exp).
OffloadActivations is rebuilt below (class Offload). QLoRA's base is stored and
run as torchao's NF4Tensor and LinearNF4 do (NF4Weight, LinearNF4), since torchao
is not installed there either; "+ 8-bit AdamW" runs torchao's AdamW8bit as rebuilt
in torchao_adamw8bit.py (bitsandbytes' paged states would sit outside torch's
allocator, see there).

Per case: torch.cuda's allocated and active-bytes peaks over steps 2 and 3 (the
first step compiles and creates the optimizer state; its peaks are kept apart),
and the allocated bytes before the step. Nothing here reads memplan.
"""
import contextlib
import json
import os
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from chunked_ce_probe import CHUNKS, chunked_loss, compute_cross_entropy  # noqa: E402
from torchao_adamw8bit import LowBitAdamW  # noqa: E402

# Llama 3.2 3B (meta-llama/Llama-3.2-3B config.json)
DIM, HEADS, KV_HEADS, HIDDEN, VOCAB, LAYERS = 3072, 24, 8, 8192, 128256, 28
ROPE_THETA = 500000.0

CASES = {
    # the README's rows, each on top of the one before (LoRA: the README's LoRA row without offloading)
    "packed": dict(compile=False, ce="full", ac=False, in_bwd=False, lora=0),
    "compile": dict(compile=True, ce="full", ac=False, in_bwd=False, lora=0),
    "chunked-ce": dict(compile=True, ce="chunked", ac=False, in_bwd=False, lora=0),
    "ac": dict(compile=True, ce="chunked", ac=True, in_bwd=False, lora=0),
    "optim-in-bwd": dict(compile=True, ce="chunked", ac=True, in_bwd=True, lora=0),
    "act-offload": dict(compile=True, ce="chunked", ac=True, in_bwd=True, lora=0, offload=True),
    "adamw8bit": dict(compile=True, ce="chunked", ac=True, in_bwd=True, lora=0, offload=True, optim8=True),
    # beside the README's rows: torchao's step after the backward instead of in it
    "adamw8bit-after-bwd": dict(compile=True, ce="chunked", ac=True, in_bwd=False, lora=0, offload=True, optim8=True),
    "lora-r64-ac": dict(compile=True, ce="chunked", ac=True, in_bwd=False, lora=64),
    "lora-r64-offload": dict(compile=True, ce="chunked", ac=True, in_bwd=False, lora=64, offload=True),
    "qlora-r64-ac": dict(compile=True, ce="chunked", ac=True, in_bwd=False, lora=64, quant=True),
    "qlora-r64-offload": dict(compile=True, ce="chunked", ac=True, in_bwd=False, lora=64, offload=True, quant=True),
    # OffloadActivations on one stream: what it picks where torch.__version__ compares below
    # "2.5.0.dev20240907" as a string, as the stable 2.5 releases' "2.5.1+cu124" does
    "act-offload-1stream": dict(compile=True, ce="chunked", ac=True, in_bwd=True, lora=0, offload=True, streams=False),
    "lora-r64-offload-1stream": dict(compile=True, ce="chunked", ac=True, in_bwd=False, lora=64, offload=True,
                                     streams=False),
    # full_finetune_distributed with fsdp_cpu_offload (what --emit torchtune writes for --offload params):
    # FSDP2 on one rank, every layer a unit, then the root (embedding, norm, tied head)
    "fsdp-cpu-offload": dict(compile=False, ce="chunked", ac=True, in_bwd=False, lora=0, fsdp_offload=True),
}


class Offload(torch.autograd.graph.saved_tensors_hooks):
    """torchtune's OffloadActivations with its defaults (use_streams, pinned memory,
    min_offload_size 1024 B, max_fwd_stash_size 5), as far as memory goes: a saved
    tensor of 1024 B or more that is not a parameter or buffer is copied to pinned host memory
    on a side stream, and the GPU tensor is held in a stash until five later saved
    tensors have been packed (then the copy is waited for and the reference dropped);
    whatever is still stashed when the backward starts is dropped there. In the
    backward each one is copied back to the GPU for the node that needs it. The
    output head runs outside it (get_act_offloading_ctx_manager's NoOpManager).
    On one stream (use_streams False) nothing is stashed."""

    def __init__(self, params, streams=True):
        self.params = {p.data_ptr() for p in params}  # parameters and buffers stay
        self.streams = streams
        self.side = torch.cuda.Stream() if streams else torch.cuda.current_stream()
        self.next_id, self.stash, self.host = 0, {}, {}
        super().__init__(self.pack, self.unpack)

    def pack(self, t):
        self.next_id += 1
        tid = self.next_id
        if t.element_size() * t.nelement() < 1024 or t.data_ptr() in self.params:
            self.host[tid] = (t, False)
            return tid
        for old in [k for k in self.stash if k <= tid - 5]:
            torch.cuda.current_stream().wait_event(self.stash.pop(old)[1])
        self.side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(self.side):
            cpu = torch.empty(t.size(), dtype=t.dtype, layout=t.layout, pin_memory=True)
            cpu.copy_(t, non_blocking=True)
        if self.streams:  # on one stream the GPU tensor goes as soon as autograd lets it go
            self.stash[tid] = (t, self.side.record_event())
        self.host[tid] = (cpu, True)
        return tid

    def unpack(self, tid):
        for old in list(self.stash):  # the backward has started: the forward's stash goes
            torch.cuda.current_stream().wait_event(self.stash.pop(old)[1])
        t, moved = self.host.pop(tid)
        return t.to("cuda", non_blocking=True) if moved else t


class NoOffload(torch.autograd.graph.saved_tensors_hooks):
    def __init__(self):
        super().__init__(lambda t: t, lambda t: t)



class RMSNorm(nn.Module):
    def __init__(self, dim, eps=1e-5):
        super().__init__()
        self.eps = eps
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        xf = x.float()
        normed = (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)).type_as(x)
        return normed * self.scale


class Rope(nn.Module):
    def __init__(self, head_dim, max_seq):
        super().__init__()
        inv = 1.0 / (ROPE_THETA ** (torch.arange(0, head_dim, 2, dtype=torch.float32)[: head_dim // 2] / head_dim))
        t = torch.arange(max_seq, dtype=torch.float32)
        ang = torch.outer(t, inv)
        self.register_buffer("cache", torch.stack([ang.cos(), ang.sin()], dim=-1), persistent=False)

    def forward(self, x):  # x: [b, s, heads, head_dim]
        s = x.size(1)
        xs = x.float().reshape(*x.shape[:-1], -1, 2)
        c = self.cache[:s].view(1, s, 1, xs.size(3), 2)
        out = torch.stack([xs[..., 0] * c[..., 0] - xs[..., 1] * c[..., 1],
                           xs[..., 1] * c[..., 0] + xs[..., 0] * c[..., 1]], -1)
        return out.flatten(3).type_as(x)


QUANT = False  # QLoRA: every linear layer's base in NF4 (torchtune quantize_base=True)


def nf4_dequantize(codes, scalers, factors, table, fan_in, dtype):
    """The whole weight back in the compute dtype, as NF4Tensor.to(dtype) gives it."""
    vals = torch.stack([table[(codes >> 4).long()], table[(codes & 15).long()]], -1).view(-1, 64)
    scale = (scalers.float() * factors.repeat_interleave(256)[: scalers.numel()]).view(-1, 1)
    return (vals * scale).to(dtype).view(-1, fan_in)


class LinearNF4(torch.autograd.Function):
    """torchao's linear_nf4 (torchao/dtypes/nf4tensor.py LinearNF4): the forward runs on the
    weight dequantised to the input's dtype and keeps only the 4-bit weight; the backward
    dequantises it again."""

    @staticmethod
    def forward(ctx, x, codes, scalers, factors, table):
        ctx.save_for_backward(codes, scalers, factors, table)
        return F.linear(x, nf4_dequantize(codes, scalers, factors, table, x.shape[-1], x.dtype))

    @staticmethod
    def backward(ctx, grad):
        codes, scalers, factors, table = ctx.saved_tensors
        w = nf4_dequantize(codes, scalers, factors, table, codes.numel() * 2 // grad.shape[-1], grad.dtype)
        return grad @ w, None, None, None, None


class NF4Weight(nn.Module):
    """A frozen weight as torchao's NF4Tensor stores it: 4-bit codes two to a byte, an int8
    scaler per block of 64 weights, an fp32 factor per 256 scalers (double quantisation),
    and the 16-entry table."""

    def __init__(self, fan_in, fan_out):
        super().__init__()
        n = fan_in * fan_out
        self.register_buffer("codes", torch.randint(0, 256, (n // 2,), dtype=torch.uint8))
        self.register_buffer("scalers", torch.randint(-127, 128, (n // 64,), dtype=torch.int8))
        self.register_buffer("factors", torch.rand(-(-n // (64 * 256)), dtype=torch.float32) * 1e-4)
        self.register_buffer("table", torch.linspace(-1, 1, 16, dtype=torch.float32))

    def forward(self, x):
        return LinearNF4.apply(x, self.codes, self.scalers, self.factors, self.table)


class LoRALinear(nn.Module):
    def __init__(self, fan_in, fan_out, rank, alpha):
        super().__init__()
        if QUANT:
            self.base = NF4Weight(fan_in, fan_out)
        else:
            self.weight = nn.Parameter(torch.empty(fan_out, fan_in).normal_(std=0.02), requires_grad=False)
        self.lora_a = nn.Linear(fan_in, rank, bias=False)
        self.lora_b = nn.Linear(rank, fan_out, bias=False)
        nn.init.zeros_(self.lora_b.weight)
        self.scaling = alpha / rank

    def forward(self, x):
        out = self.base(x) if QUANT else F.linear(x, self.weight)
        return out + self.scaling * self.lora_b(self.lora_a(x))


def linear(fan_in, fan_out, lora):
    if lora:
        return LoRALinear(fan_in, fan_out, lora, 2 * lora)
    if QUANT:  # FrozenNF4Linear: the linears without an adapter are quantised too
        return NF4Weight(fan_in, fan_out)
    layer = nn.Linear(fan_in, fan_out, bias=False)
    nn.init.normal_(layer.weight, std=0.02)
    return layer


class Attention(nn.Module):
    def __init__(self, rope, lora):
        super().__init__()
        self.head_dim = DIM // HEADS
        self.q_proj = linear(DIM, HEADS * self.head_dim, lora)
        self.k_proj = linear(DIM, KV_HEADS * self.head_dim, 0)  # the README's LoRA: q, v, output_proj
        self.v_proj = linear(DIM, KV_HEADS * self.head_dim, lora)
        self.output_proj = linear(DIM, DIM, lora)
        self.rope = rope

    def forward(self, x):
        b, s, _ = x.shape
        per_kv = HEADS // KV_HEADS
        q = self.rope(self.q_proj(x).view(b, s, HEADS, self.head_dim)).transpose(1, 2)
        k = self.rope(self.k_proj(x).view(b, s, KV_HEADS, self.head_dim)).transpose(1, 2)
        v = self.v_proj(x).view(b, s, KV_HEADS, self.head_dim).transpose(1, 2)
        shape = (b, KV_HEADS, per_kv, s, self.head_dim)
        k = k.unsqueeze(2).expand(shape).flatten(1, 2)
        v = v.unsqueeze(2).expand(shape).flatten(1, 2)
        if hasattr(F, "scaled_dot_product_attention"):
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:  # the CPU smoke test on torch 1.13
            mask = torch.ones(s, s, dtype=torch.bool).triu(1)
            att = (q @ k.transpose(-1, -2) / self.head_dim ** 0.5).masked_fill(mask, float("-inf"))
            out = att.softmax(-1) @ v
        return self.output_proj(out.transpose(1, 2).contiguous().view(b, s, -1))


class FeedForward(nn.Module):
    def __init__(self, lora):
        super().__init__()
        self.w1 = linear(DIM, HIDDEN, lora)
        self.w2 = linear(HIDDEN, DIM, lora)
        self.w3 = linear(DIM, HIDDEN, lora)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class Layer(nn.Module):
    def __init__(self, rope, lora):
        super().__init__()
        self.sa_norm, self.mlp_norm = RMSNorm(DIM), RMSNorm(DIM)
        self.attn, self.mlp = Attention(rope, lora), FeedForward(lora)

    def forward(self, x):
        h = self.attn(self.sa_norm(x)) + x
        return h + self.mlp(self.mlp_norm(h))


class Checkpointed(nn.Module):
    def __init__(self, inner):
        super().__init__()
        self.inner = inner

    def forward(self, x):
        return torch.utils.checkpoint.checkpoint(self.inner, x, use_reentrant=False, preserve_rng_state=False)


class Decoder(nn.Module):
    def __init__(self, seq, lora, ce):
        super().__init__()
        rope = Rope(DIM // HEADS, seq)
        self.tok_embeddings = nn.Embedding(VOCAB, DIM)
        nn.init.normal_(self.tok_embeddings.weight, std=0.02)
        self.layers = nn.ModuleList(Layer(rope, lora) for _ in range(LAYERS))
        self.norm = RMSNorm(DIM)
        self.ce = ce
        self.rope = rope

    def rope_cache_to_gpu(self):  # the one RoPE table the layers share (a buffer FSDP does not own)
        self.rope.cache = self.rope.cache.cuda()

    def forward(self, tokens):
        h = self.tok_embeddings(tokens)
        for layer in self.layers:
            h = layer(h)
        h = self.norm(h)
        w = self.tok_embeddings.weight
        with NoOffload():  # the output head is never offloaded
            if self.ce == "chunked":
                return [F.linear(c, w) for c in h.tensor_split(CHUNKS, dim=1)]
            return F.linear(h, w).float()


def shard_with_cpu_offload(model):
    """torchtune's training.shard_model as full_finetune_distributed calls it with
    fsdp_cpu_offload and fsdp_reshard_after_forward True (meta-pytorch/torchtune@42ca983c
    torchtune/training/_distributed.py): fully_shard on every TransformerSelfAttentionLayer
    (under its checkpoint wrapper), then on the whole model, each with CPUOffloadPolicy
    (parameters, gradients and the optimizer step on the host). One rank: a process group
    of world size 1, so each all-gather is a host-to-device copy of the whole unit."""
    import torch.distributed as dist
    from torch.distributed.fsdp import CPUOffloadPolicy, fully_shard
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29517")
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=0, world_size=1)
    for layer in model.layers:
        fully_shard(getattr(layer, "inner", layer), reshard_after_forward=True, offload_policy=CPUOffloadPolicy())
    fully_shard(model, reshard_after_forward=True, offload_policy=CPUOffloadPolicy())
    model.rope_cache_to_gpu()


def run_case(name, batch=2, seq=4096, steps=3):
    cfg = CASES[name]
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    if dev == "cpu":  # a smoke test of the path on a machine without a GPU
        global DIM, HEADS, KV_HEADS, HIDDEN, VOCAB, LAYERS
        DIM, HEADS, KV_HEADS, HIDDEN, VOCAB, LAYERS = 64, 4, 2, 128, 256, 2
        seq = 32
    global QUANT
    QUANT = cfg.get("quant", False)
    torch.manual_seed(0)
    torch.set_default_dtype(torch.bfloat16)
    # FSDP's CPU offload shards a model built on the CPU; the rest is built on the GPU
    on_gpu = dev == "cuda" and not cfg.get("fsdp_offload")
    with (torch.device(dev) if on_gpu else contextlib.nullcontext()):
        model = Decoder(seq, cfg["lora"], cfg["ce"])
    torch.set_default_dtype(torch.float32)
    if cfg["lora"]:
        for n, p in model.named_parameters():
            p.requires_grad_("lora_" in n)
    if cfg["ac"]:
        model.layers = nn.ModuleList(Checkpointed(layer) for layer in model.layers)
    fsdp = cfg.get("fsdp_offload") and dev == "cuda"
    if fsdp:
        shard_with_cpu_offload(model)
    compiled = cfg["compile"] and dev == "cuda"
    if compiled:
        for layer in model.layers:
            layer.compile()
    full_loss = nn.CrossEntropyLoss(ignore_index=-100)
    ce_chunk = torch.compile(compute_cross_entropy) if compiled else compute_cross_entropy
    if cfg["ce"] == "full" and compiled:
        full_loss = torch.compile(full_loss)
    trained = [p for p in model.parameters() if p.requires_grad]
    kw = dict(lr=2e-5, fused=True) if dev == "cuda" else dict(lr=2e-5)  # torch 1.13 has no fused AdamW
    if fsdp:  # the sharded parameters are on the host, and so is their step
        kw = dict(lr=2e-5, foreach=False)

    def make_optimizer(params):
        if cfg.get("optim8"):
            return LowBitAdamW(params, lr=2e-5, compiled=dev == "cuda")
        return torch.optim.AdamW(params, **kw)

    if cfg["in_bwd"]:
        optims = {p: make_optimizer([p]) for p in trained}

        def step_in_bwd(p):
            optims[p].step()
            optims[p].zero_grad(set_to_none=True)

        for p in trained:
            p.register_post_accumulate_grad_hook(step_in_bwd)
        opt = None
    else:
        opt = make_optimizer(trained)
    tokens = torch.randint(0, VOCAB, (batch, seq), device=dev)
    labels = torch.cat([tokens[:, 1:], torch.full((batch, 1), -100, device=dev)], dim=1)

    def stats():
        if dev != "cuda":
            return 0, 0
        s = torch.cuda.memory_stats()
        return s["allocated_bytes.all.peak"], s["active_bytes.all.peak"]

    offload = contextlib.nullcontext()
    if cfg.get("offload") and dev == "cuda":
        offload = Offload(list(model.parameters()) + list(model.buffers()), cfg.get("streams", True))
    out = dict(case=name, **cfg, batch=batch, seq=seq, steps=[])
    for step in range(steps):
        if dev == "cuda":
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated() if dev == "cuda" else 0
        t0 = time.time()
        with offload:
            logits = model(tokens)
        if cfg["ce"] == "chunked":
            loss = chunked_loss(ce_chunk, logits, labels)
        else:
            loss = full_loss(logits.reshape(-1, logits.size(-1)), labels.reshape(-1))
        del logits
        fwd_alloc, fwd_active = stats()
        after_fwd = torch.cuda.memory_allocated() if dev == "cuda" else 0
        loss.backward()
        if opt is not None:
            opt.step()
            opt.zero_grad(set_to_none=True)
        if dev == "cuda":
            torch.cuda.synchronize()
        alloc, active = stats()
        out["steps"].append(dict(before=before, forward_allocated_peak=fwd_alloc, forward_active_peak=fwd_active,
                                 after_forward=after_fwd, allocated_peak=alloc, active_peak=active,
                                 seconds=round(time.time() - t0, 2), loss=float(loss)))
        del loss
    later = out["steps"][1:]
    out["allocated_peak"] = max(s["allocated_peak"] for s in later)
    out["active_peak"] = max(s["active_peak"] for s in later)
    out["params"] = sum(p.numel() for p in model.parameters())
    out["trainable"] = sum(p.numel() for p in trained)
    if fsdp:
        torch.distributed.destroy_process_group()
    return out


def main():
    argv = sys.argv[1:]
    if argv and argv[0] == "--case":
        res = run_case(argv[1])
        with open(argv[2], "w") as f:
            json.dump(res, f, indent=1)
        return
    if not argv:
        sys.exit(__doc__)
    path, names = argv[0], argv[1:] or list(CASES)
    res = {"device": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
           "torch": torch.__version__, "cases": {}}
    for name in names:
        tmp = path + "." + name + ".json"
        t0 = time.time()
        p = subprocess.run([sys.executable, os.path.abspath(__file__), "--case", name, tmp],
                           capture_output=True, text=True)
        if p.returncode != 0:
            res["cases"][name] = dict(error=p.stderr.strip().splitlines()[-1:] or ["exit %d" % p.returncode])
            print("%-14s failed: %s" % (name, p.stderr.strip()[-2000:]), flush=True)
        else:
            with open(tmp) as f:
                res["cases"][name] = r = json.load(f)
            os.remove(tmp)
            print("%-14s allocated %.2f GiB, active %.2f GiB (steps 2-3; step 1 %.2f GiB), %.0f s" %
                  (name, r["allocated_peak"] / 2**30, r["active_peak"] / 2**30,
                   r["steps"][0]["allocated_peak"] / 2**30, time.time() - t0), flush=True)
        with open(path, "w") as f:  # after every case, so a cut-off run keeps what it measured
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
