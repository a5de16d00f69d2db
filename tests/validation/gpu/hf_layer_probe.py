#!/usr/bin/env python3
"""What one layer of a transformers model keeps for its backward, on a CUDA GPU.

  hf_layer_probe.py OUT.json [MODEL ...]

For each models/MODEL.json (default: pythia-1b, phi-2 and llama-3.2-1b), a
two-layer copy of the model (transformers AutoModelForCausalLM.from_config,
random weights, bf16, SDPA, every weight trained) runs one forward of batch
2 x 512 and the autograd graph is walked from the loss as litgpt_probe.py
walks it: every saved tensor, each storage once, parameters and buffers left
out, by layer (forward pre-hooks on the decoder layers). What it is for:
whether the output projection's saved input is SDPA's output itself or a copy
of its own, which follows how the model lays out its queries (rotary on part
of each head concatenates, so the queries come out head-major); what the
MLP's activation keeps (gelu_new is composed in Python); whether a parallel
block's norms share their input.
Nothing here reads memplan.
"""
import json
import os
import sys

import torch
import transformers

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from litgpt_probe import census, storage  # noqa: E402

B, T = 2, 512


def decoder_layers(model):
    for path in ("gpt_neox.layers", "model.layers"):
        obj = model
        try:
            for part in path.split("."):
                obj = getattr(obj, part)
            return obj
        except AttributeError:
            continue
    raise SystemExit("no decoder layers found")


def run(name):
    with open(os.path.join(HERE, "models", name + ".json")) as f:
        conf = {k: v for k, v in json.load(f).items() if not k.startswith("_")}
    conf["num_hidden_layers"] = 2
    hf = transformers.AutoConfig.for_model(conf.pop("model_type"), **conf)
    hf.use_cache = False
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = transformers.AutoModelForCausalLM.from_config(hf, dtype=torch.bfloat16, attn_implementation="sdpa")
    model.train()
    layer_now = {"i": "embed"}
    hooks = [blk.register_forward_pre_hook(lambda m, a, i=i: layer_now.__setitem__("i", i))
             for i, blk in enumerate(decoder_layers(model))]
    final = next(mod for name, mod in model.named_modules()
                 if name.endswith(("final_layer_norm", "final_layernorm", "model.norm")))
    hooks.append(final.register_forward_pre_hook(lambda m, a: layer_now.__setitem__("i", "head")))
    ptr_layer = {}

    def pack(t):
        if t.device.type == "cuda":
            ptr_layer.setdefault(storage(t).data_ptr(), layer_now["i"])
        return t

    ids = torch.randint(0, hf.vocab_size, (B, T), device="cuda")
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = model(input_ids=ids, labels=ids)
    for h in hooks:
        h.remove()
    saved = census(out.loss, model, lambda p: ptr_layer.get(p, "head"))
    layer1 = [e for e in saved.values() if e["layer"] == 1]
    res = {"layer1_bytes": sum(e["bytes"] for e in layer1),
           "head_and_loss_bytes": sum(e["bytes"] for e in saved.values() if e["layer"] == "head"),
           "layer1_tensors": sorted(({"bytes": e["bytes"], "savers": e["savers"]} for e in layer1),
                                    key=lambda t: -t["bytes"]),
           "hidden": hf.hidden_size, "tokens": B * T}
    unit = B * T * hf.hidden_size
    print("== %s: layer 1 keeps %d B = %.3f B per token and hidden unit" % (name, res["layer1_bytes"],
                                                                           res["layer1_bytes"] / unit))
    for t in res["layer1_tensors"]:
        print("   %12d B %6.3f  %s" % (t["bytes"], t["bytes"] / unit, " | ".join(t["savers"][:3])))
    sys.stdout.flush()
    return res


def main():
    names = sys.argv[2:] or ["pythia-1b", "phi-2", "llama-3.2-1b"]
    res = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
           "transformers": transformers.__version__, "batch": B, "seq": T, "models": {}}
    for n in names:
        res["models"][n] = run(n)
    with open(sys.argv[1], "w") as f:
        json.dump(res, f, indent=1)


if __name__ == "__main__":
    main()
