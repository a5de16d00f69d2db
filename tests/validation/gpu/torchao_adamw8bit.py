#!/usr/bin/env python3
"""torchao's AdamW8bit and AdamW4bit rebuilt on plain tensors, and what their step allocates on a GPU.

  torchao_adamw8bit.py OUT.json            the step's transient bytes for each Llama 3.2 3B weight shape
  torchao_adamw8bit.py --bits 4 OUT.json   the same for its 4-bit sibling, AdamW4bit

torchao is not installed on the GPU machines this project is lent. torchtune's README row
"+ 8-bit AdamW" (pytorch/torchtune@a9ea6d5bf023) names the class AdamW8bit, and torchtune's
docs (docs/source/tutorials/memory_optimizations.rst, "Lower Precision Optimizers") point to
torchao.prototype.low_bit_optim.AdamW8bit and bitsandbytes' PagedAdamW8bit. bitsandbytes'
paged states live in CUDA managed memory (bitsandbytes/functional.py get_paged,
cudaMallocManaged), outside torch's allocator, so its row could not show the 17.6 GiB of
active bytes the README prints; torchao's states are ordinary torch tensors. This file
follows torchao as read in pytorch/ao@0b05caa18e67:
  torchao/prototype/low_bit_optim/adam.py  _AdamBase: a state is quantised only when the
      parameter has >= 4096 values and a multiple of the block (256); otherwise
      torch.zeros_like(p), in the parameter's dtype; the step count and lr are CPU tensors;
      each parameter is stepped by torch.compile(single_param_adam, fullgraph=True,
      dynamic=False), which works in fp32: p.float(), grad.float(), decoupled weight decay,
      both moments dequantised and lerped, copied back (quantised), the update, p.copy_;
  subclass_8bit.py  OptimState8bit: uint8 codes of the parameter's shape, one fp32 scale per
      256 values, a 256-entry table; lerp dequantises, copy_ quantises;
  quant_utils.py  quantize_8bit_with_qmap (block absmax, divide, an 8-step branchless binary
      search in the table, round to the nearer neighbour) and dequant_with_qmap
      (table[codes] times the block's scale);
  AdamW4bit (subclass_4bit.py OptimState4bit, quantize_4bit_with_qmap): the same step with
      blocks of 128, two 4-bit codes a byte (high nibble first), a 16-entry table (the second
      moment's linear, without zero) and a 4-step search.
Under torch.compile a tensor subclass is traced as its inner tensors, so the same operations
on plain codes, scales and table give the graph inductor compiles. The table's values (a
dynamic-exponent map in torchao) do not change what is allocated; a log-spaced table stands
in for it. Nothing here reads memplan.
"""
import json
import sys

import torch

BLOCK = {8: 256, 4: 128}  # AdamW8bit's and AdamW4bit's block_size defaults
MIN_QUANTISED = 4096  # _new_buffer: smaller states stay in the parameter's dtype
INDEX = torch.int32 if hasattr(torch, "compile") else torch.int64  # torch 1.13 (the CPU smoke test) wants int64


def table(signed, bits=8):
    """A sorted 2**bits-entry map onto [-1, 1] (signed) or [0, 1], dense near zero; 4-bit
    unsigned is torchao's linear map without zero (subclass_4bit.py QMAP_UNSIGNED)."""
    n = 2 ** bits
    if signed:
        mags = torch.logspace(-7 if bits == 8 else -3, 0, n // 2)
        vals = torch.cat([-mags[1:].flip(0), torch.zeros(1), mags])
    elif bits == 8:
        vals = torch.cat([torch.zeros(1), torch.logspace(-7, 0, n - 1)])
    else:
        vals = torch.linspace(0, 1, n + 1)[1:]
    return vals.sort().values


def dequantize(codes, scale, qmap, like):
    if codes.numel() != like.numel():  # 4-bit: two codes a byte, high nibble first
        codes = torch.stack([codes >> 4, codes & 15], dim=-1)
    return (qmap[codes.to(INDEX)].view(scale.numel(), -1) * scale.view(-1, 1)).view(like.shape)


def quantize_into(x, codes, scale, qmap):
    bits = 8 if codes.numel() == x.numel() else 4
    blocks = x.reshape(-1, BLOCK[bits])
    absmax = blocks.abs().amax(-1).clamp_min(1e-12)
    y = (blocks / absmax.view(-1, 1)).view(-1)
    top = 2 ** (bits - 1)
    idx = torch.where(y >= qmap[top], top, 0)
    bit = top // 2
    while bit:  # the largest entry not above y
        idx = idx + torch.where(y >= qmap[idx + bit], bit, 0)
        bit //= 2
    up = (idx + 1).clamp(max=2 ** bits - 1)
    low_val, up_val = qmap[idx], qmap[up]
    idx = torch.where(y - low_val >= (up_val - low_val) * 0.5, up, idx).to(torch.uint8)
    if bits == 4:
        idx = (idx[::2] << 4) | idx[1::2]
    codes.copy_(idx.view(codes.shape))
    scale.copy_(absmax)


def load(state, like):
    return dequantize(*state, like) if isinstance(state, tuple) else state.float()


def store(state, x):
    if isinstance(state, tuple):
        quantize_into(x, *state)
    else:
        state.copy_(x)


def single_param_adamw(p, grad, step, exp_avg, exp_avg_sq, lr, beta1, beta2, weight_decay, eps):
    p32 = p.float()
    g32 = grad.float()
    p32 = p32 - lr * weight_decay * p32
    correction1 = 1 - beta1 ** step
    correction2 = 1 - beta2 ** step
    m = load(exp_avg, g32).lerp(g32, 1 - beta1)
    v = load(exp_avg_sq, g32).lerp(g32.square(), 1 - beta2)
    store(exp_avg, m)
    store(exp_avg_sq, v)
    denom = v.sqrt() / correction2.sqrt() + eps
    p.copy_(p32 - lr * (m / correction1) / denom)


class LowBitAdamW:
    """The optimizer's bookkeeping: states made at the first step, one compiled step per parameter."""

    def __init__(self, params, lr=2e-5, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2, compiled=True, bits=8):
        self.params = list(params)
        self.bits = bits
        self.lr = torch.tensor(lr)
        self.betas, self.eps, self.weight_decay = betas, eps, weight_decay
        self.state = {}
        self.fn = single_param_adamw
        if compiled:
            for name in ("cache_size_limit", "recompile_limit"):  # one graph per weight shape
                if hasattr(torch._dynamo.config, name):
                    setattr(torch._dynamo.config, name, 64)
            self.fn = torch.compile(single_param_adamw, fullgraph=True, dynamic=False)

    def _new_state(self, p, signed):
        block = BLOCK[self.bits]
        if p.numel() >= MIN_QUANTISED and p.numel() % block == 0:
            shape = p.shape if self.bits == 8 else (p.numel() // 2,)
            return (torch.zeros(shape, dtype=torch.uint8, device=p.device),
                    torch.zeros(p.numel() // block, device=p.device),
                    table(signed, self.bits).to(p.device))
        return torch.zeros_like(p)

    @torch.no_grad()
    def step(self):
        for p in self.params:
            if p.grad is None:
                continue
            st = self.state.get(p)
            if st is None:
                st = self.state[p] = dict(step=torch.tensor(0.0), exp_avg=self._new_state(p, True),
                                          exp_avg_sq=self._new_state(p, False))
            st["step"] += 1
            self.fn(p.detach(), p.grad, st["step"], st["exp_avg"], st["exp_avg_sq"], self.lr,
                    self.betas[0], self.betas[1], self.weight_decay, self.eps)

    def zero_grad(self, set_to_none=True):
        for p in self.params:
            p.grad = None


# Llama 3.2 3B's weight shapes (meta-llama/Llama-3.2-3B config.json): embedding (tied head),
# q and output_proj, k and v, gate and up, down, a norm's scale
SHAPES = {"embedding": (128256, 3072), "q_proj": (3072, 3072), "k_proj": (1024, 3072),
          "w1": (8192, 3072), "w2": (3072, 8192), "norm": (3072,)}


def transient(shape, bits=8, steps=3):
    """Peak allocated bytes during each step, above what was allocated before it."""
    torch.manual_seed(0)
    p = torch.nn.Parameter(torch.randn(shape, device="cuda", dtype=torch.bfloat16) * 0.02)
    opt = LowBitAdamW([p], bits=bits)
    out = []
    for _ in range(steps):
        p.grad = torch.randn_like(p) * 1e-3
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        opt.step()
        torch.cuda.synchronize()
        out.append(dict(before=before, peak_above=torch.cuda.max_memory_allocated() - before,
                        after=torch.cuda.memory_allocated() - before))
        opt.zero_grad()
    return dict(shape=list(shape), numel=p.numel(), steps=out)


def main():
    argv = sys.argv[1:]
    bits = 8
    if argv[:1] == ["--bits"] and len(argv) == 3 and argv[1] in ("4", "8"):
        bits, argv = int(argv[1]), argv[2:]
    if len(argv) != 1:
        sys.exit(__doc__)
    res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__, "bits": bits, "shapes": {}}
    for name, shape in SHAPES.items():
        r = res["shapes"][name] = transient(shape, bits)
        last = r["steps"][-1]["peak_above"]
        print("%-10s %12d values: step transient %.3f GiB (%.2f bytes per value)" %
              (name, r["numel"], last / 2**30, last / r["numel"]), flush=True)
        with open(argv[0], "w") as f:
            json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
