#!/usr/bin/env python3
"""memplan_callback: write memtrain metrics files (format v1) from PyTorch training, for memtop.

memtop(1) follows a CSV file with one row per optimizer step. memtrain writes
it; this module writes the same format from any PyTorch loop, so that
``memtop run.csv`` shows a real GPU run next to memplan's prediction.

Plain PyTorch::

    from memplan_callback import MetricsWriter
    with MetricsWriter("run.csv", predicted="estimate.json", steps=1000) as mw:
        for step, batch in enumerate(loader, 1):
            loss = train_step(batch)
            mw.step(step, loss=loss.item(), tokens=batch.numel(), lr=sched.get_last_lr()[0])

Hugging Face Trainer::

    from memplan_callback import MemtopCallback
    trainer = Trainer(..., callbacks=[MemtopCallback("run.csv", tokens_per_step=B * T * K)])

``predicted`` is what ``memplan estimate ... --format json`` prints (a dict, or
the path of a file holding it), or a plain dict {"weights": bytes, ...,
"total": bytes}. With it, memtop shows the prediction's error per component.

What PyTorch can tell: cur_total = torch.cuda.memory_allocated(), peak_total =
torch.cuda.max_memory_allocated(), cur_overhead = memory_reserved() -
memory_allocated() (the caching allocator's reserve). The per-component
columns it cannot know are left empty (N/A in memtop).

Calibration: ``record_measurement`` appends one measured run to the file
``memplan calibrate`` reads (the format tests/validation/harness.py writes)::

    from memplan_callback import record_measurement
    torch.cuda.reset_peak_memory_stats()
    ...train a few steps...
    record_measurement("runs.csv", model="llama-2-7b", batch=4, seq=2048,
                       precision="amp-bf16", optimizer="adamw", checkpointing="full")

or pass ``measurements="runs.csv", measurement_config={...}`` to MemtopCallback,
which records the run when training ends. Then ``memplan calibrate runs.csv
-o my-gpu.csv`` and ``memplan ... --framework my-gpu.csv``.

Dependencies: the standard library; torch when measuring; transformers only
for MemtopCallback. The module imports without either.

Self-test (no torch needed; CI and memtop's end-to-end test use it)::

    python3 tools/memplan_callback.py --selftest OUT.csv [--steps N] [--delay S]
    memtop -- python3 tools/memplan_callback.py --selftest --delay 0.2
"""

import csv
import json
import math
import os
import sys
import time

__all__ = ["MetricsWriter", "MemtopCallback", "COLUMNS", "COMPONENTS", "FORMAT_LINE",
           "MEASUREMENT_COLUMNS", "record_measurement", "write_measurements"]

FORMAT_LINE = "# memtrain metrics v1"
COMPONENTS = ("weights", "gradients", "optimizer", "activations", "overhead")
COLUMNS = (
    ["step", "time_s", "loss", "tokens_per_s", "lr"]
    + ["cur_" + c for c in COMPONENTS + ("total",)]
    + ["peak_" + c for c in COMPONENTS + ("total",)]
    + ["pred_" + c for c in COMPONENTS + ("total",)]
    + ["rss_bytes"]
)


# One measured training run per row: what `memplan calibrate` reads. The
# configuration columns are memplan's option names (model is a profile name;
# or family plus dimensions); empty cells mean memplan's default.
MEASUREMENT_COLUMNS = [
    "name", "framework", "device", "torch", "model", "family", "layers", "hidden",
    "heads", "kv_heads", "ffn", "vocab", "max_pos", "batch", "seq", "accum",
    "precision", "optimizer", "optimizer_impl", "checkpointing", "attention", "lora_rank",
    "lora_targets", "quant", "dropout", "ce", "params", "step_base_bytes",
    "allocated_peak_bytes", "reserved_peak_bytes", "device_peak_bytes", "peak_phase",
]


def write_measurements(path, rows):
    """Write rows (dicts keyed by MEASUREMENT_COLUMNS) atomically: a temporary file, then rename."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with open(tmp, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=MEASUREMENT_COLUMNS, extrasaction="ignore")
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in MEASUREMENT_COLUMNS})
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def record_measurement(path, name=None, framework="pytorch", **config):
    """Append this process's CUDA peaks since the last reset to `path` as one measured run.

    config: memplan's options for the run (model=, batch=, seq=, precision=,
    optimizer=, checkpointing=, attention=, lora_rank=, ... see MEASUREMENT_COLUMNS).
    allocated_peak_bytes = torch.cuda.max_memory_allocated(), reserved_peak_bytes =
    max_memory_reserved(), device_peak_bytes = the reserved peak plus what the
    device holds outside the allocator now (CUDA context, libraries: total - free
    - reserved, from torch.cuda.mem_get_info()).
    """
    import torch  # noqa: PLC0415

    unknown = set(config) - set(MEASUREMENT_COLUMNS)
    if unknown:
        raise ValueError("record_measurement: unknown column(s) %s" % ", ".join(sorted(unknown)))
    free, total = torch.cuda.mem_get_info()
    reserved_peak = torch.cuda.max_memory_reserved()
    outside = max(0, (total - free) - torch.cuda.memory_reserved())
    row = dict(config, name=name or config.get("model") or "run", framework=framework,
               device=torch.cuda.get_device_name(), torch=torch.__version__,
               allocated_peak_bytes=torch.cuda.max_memory_allocated(),
               reserved_peak_bytes=reserved_peak, device_peak_bytes=reserved_peak + outside)
    rows = []
    if os.path.exists(path):
        with open(path, newline="") as f:
            rows = list(csv.DictReader(f))
    rows.append(row)
    write_measurements(path, rows)
    return row


def _torch_cuda_memory():
    """(allocated, max_allocated, reserved) of the current CUDA device, or None.
    The peak is reset after it is read, so each row's peak is its own step's."""
    try:
        import torch  # noqa: PLC0415 (optional dependency)
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    mem = (
        torch.cuda.memory_allocated(),
        torch.cuda.max_memory_allocated(),
        torch.cuda.memory_reserved(),
    )
    torch.cuda.reset_peak_memory_stats()
    return mem


def rank_and_ranks():
    """(rank, world size) of a distributed run, from the launcher's environment
    (torchrun, accelerate and deepspeed set RANK and WORLD_SIZE); (0, 1) alone."""
    try:
        return int(os.environ.get("RANK", "0")), max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 0, 1


def rank_path(path, rank, ranks):
    """One metrics file per rank, as memtrain names them: run.csv -> run.rank0.csv, run.rank1.csv..."""
    if ranks <= 1:
        return path
    base, ext = os.path.splitext(path)
    return "%s.rank%d%s" % (base, rank, ext)


def precision_label(args, model=None):
    """memplan's name for what the run does (memplan(1), --precision): the Trainer's
    bf16/fp16 flags say autocast, and the trainable weights' own dtype says whether
    they are stored in 16 bits (with fp32 masters under DeepSpeed, none otherwise)."""
    half = "bf16" if getattr(args, "bf16", False) else "fp16" if getattr(args, "fp16", False) else None
    stored = None
    if model is not None and hasattr(model, "parameters"):
        for p in model.parameters():
            if getattr(p, "requires_grad", False):
                stored = str(getattr(p, "dtype", ""))
                break
    stored16 = stored in ("torch.bfloat16", "torch.float16")
    if stored16:
        kind = "bf16" if stored == "torch.bfloat16" else "fp16"
        if getattr(args, "deepspeed", None):
            return "mixed-" + kind
        return "pure-bf16" if kind == "bf16" else "mixed-fp16"
    return "amp-" + half if half else "fp32"


def _torch_device():
    try:
        import torch  # noqa: PLC0415
    except ImportError:
        return "cpu"
    if torch.cuda.is_available():
        return "cuda:%d" % torch.cuda.current_device()
    return "cpu"


def _rss_bytes():
    """Resident set size of this process (Linux /proc), or None."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _load_prediction(predicted):
    """{column: bytes} for the pred_* columns, from memplan's JSON or a plain dict."""
    if predicted is None:
        return {}, {}
    if isinstance(predicted, (str, os.PathLike)):
        with open(predicted) as f:
            predicted = json.load(f)
    pred, meta = {}, {}
    if "components" in predicted:  # memplan estimate --format json
        comps = predicted["components"]
        for c in COMPONENTS:
            if comps.get(c) is not None:
                pred["pred_" + c] = comps[c]
        total = predicted.get("allocated_bytes", predicted.get("total_bytes"))  # total_bytes: before 2026-11
        if total is not None:
            pred["pred_total"] = total
        model = predicted.get("model")
        if isinstance(model, dict) and model.get("name"):
            meta["model"] = model["name"]
        if isinstance(predicted.get("settings"), dict):
            meta["settings"] = predicted["settings"]
        if predicted.get("budget_bytes"):
            meta["budget_bytes"] = predicted["budget_bytes"]
    else:
        for c in COMPONENTS + ("total",):
            if predicted.get(c) is not None:
                pred["pred_" + c] = predicted[c]
    return pred, meta


def _clean(text):
    """One line, no characters that would break the comment line."""
    return " ".join(str(text).split())


def _fmt(value, fmt):
    if value is None:
        return ""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return fmt % value


class MetricsWriter:
    """Append one memtrain-v1 row per optimizer step to `path`, flushed each time.

    path          the CSV file (created or truncated)
    predicted     memplan's estimate (JSON dict or its path) or {"weights": bytes, ..., "total": bytes}
    steps         planned optimizer steps (memtop's ETA)
    budget_bytes  the memory budget (memtop's out-of-memory line); None or 0: unknown
    model, settings, device   written as comments; settings may be a dict or "k=v k=v"
    memory        a callable returning (allocated, max_allocated, reserved) bytes or None;
                  default: torch.cuda on the current device
    clock         a callable returning seconds (default time.monotonic)
    """

    def __init__(self, path, predicted=None, steps=None, budget_bytes=None, model=None,
                 settings=None, device=None, memory=None, clock=None):
        pred, meta = _load_prediction(predicted)
        self._pred = pred
        self._memory = memory if memory is not None else _torch_cuda_memory
        self._clock = clock or time.monotonic
        self._t0 = self._clock()
        self._last = self._t0
        model = model or meta.get("model")
        settings = settings if settings is not None else meta.get("settings")
        if budget_bytes is None:
            budget_bytes = meta.get("budget_bytes")
        if device is None:
            device = _torch_device() if memory is None else "cpu"
        self._f = open(path, "w", newline="")
        w = self._f.write
        w(FORMAT_LINE + "\n")
        if model:
            w("# model: %s\n" % _clean(model))
        if settings:
            if isinstance(settings, dict):
                settings = " ".join("%s=%s" % (_clean(k).replace(" ", "_"),
                                               _clean(str(v).lower() if isinstance(v, bool) else v).replace(" ", "_"))
                                    for k, v in settings.items())
            w("# settings: %s\n" % _clean(settings))
        if steps:
            w("# steps: %d\n" % int(steps))
        w("# budget_bytes: %d\n" % int(budget_bytes or 0))
        w("# device: %s\n" % _clean(device))
        self._csv = csv.writer(self._f, lineterminator="\n")
        self._csv.writerow(COLUMNS)
        self._f.flush()

    def step(self, step, loss=None, tokens=None, lr=None):
        """Write the row of optimizer step `step` (an int): loss, tokens processed
        since the previous call (for tokens/s), learning rate; all optional."""
        now = self._clock()
        dt, self._last = now - self._last, now
        row = dict.fromkeys(COLUMNS, "")
        row["step"] = "%d" % int(step)
        row["time_s"] = "%.3f" % (now - self._t0)
        row["loss"] = _fmt(None if loss is None else float(loss), "%.6g")
        if tokens is not None and dt > 0:
            row["tokens_per_s"] = "%.1f" % (float(tokens) / dt)
        row["lr"] = _fmt(None if lr is None else float(lr), "%.6g")
        mem = self._memory()
        if mem is not None:
            allocated, max_allocated, reserved = (int(x) for x in mem)
            row["cur_total"] = "%d" % allocated
            row["peak_total"] = "%d" % max_allocated
            row["cur_overhead"] = "%d" % max(0, reserved - allocated)
        for k, v in self._pred.items():
            row[k] = "%d" % round(v)
        rss = _rss_bytes()
        if rss is not None:
            row["rss_bytes"] = "%d" % rss
        self._csv.writerow([row[c] for c in COLUMNS])
        self._f.flush()

    def close(self):
        if not self._f.closed:
            self._f.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


try:  # transformers is optional: the module imports without it
    from transformers import TrainerCallback as _TrainerCallback
except Exception:  # ImportError, or a broken install
    _TrainerCallback = object


class MemtopCallback(_TrainerCallback):
    """A transformers.TrainerCallback writing a memtop metrics file at every optimizer step:
    one file per rank in a distributed run (run.csv -> run.rank0.csv, ..., as memtrain),
    the precision labelled from the run (precision_label), each row's peak its own step's.

    tokens_per_step   tokens per optimizer step (B x T x accumulation), for tokens/s
    measurements      a measurements CSV for `memplan calibrate`: the run's peaks are
                      appended when training ends (record_measurement), described by
                      what the Trainer's arguments tell plus measurement_config (a dict
                      of memplan options: model=, seq=, optimizer=, lora_rank=, ...)
    The loss and learning rate are the latest the Trainer logged (logging_steps).
    """

    def __init__(self, path, predicted=None, budget_bytes=None, tokens_per_step=None, model=None,
                 measurements=None, measurement_config=None):
        self.measurements = measurements
        self.measurement_config = measurement_config or {}
        self.path = path
        self.predicted = predicted
        self.budget_bytes = budget_bytes
        self.tokens_per_step = tokens_per_step
        self.model = model
        self.writer = None

    def on_train_begin(self, args, state, control, **kwargs):
        rank, ranks = rank_and_ranks()
        settings = {
            "batch": getattr(args, "per_device_train_batch_size", None),
            "accum": getattr(args, "gradient_accumulation_steps", None),
            "precision": precision_label(args, kwargs.get("model")),
            "checkpointing": "full" if getattr(args, "gradient_checkpointing", False) else "none",
            "optimizer": getattr(args, "optim", None),
        }
        if ranks > 1:
            settings.update(rank=rank, ranks=ranks)
        settings = {k: v for k, v in settings.items() if v is not None}
        model = self.model
        if model is None and kwargs.get("model") is not None:
            config = getattr(kwargs["model"], "config", None)
            model = getattr(config, "_name_or_path", None) or type(kwargs["model"]).__name__
        self.writer = MetricsWriter(rank_path(self.path, rank, ranks), predicted=self.predicted, steps=getattr(state, "max_steps", None),
                                    budget_bytes=self.budget_bytes, model=model, settings=settings)

    def on_step_end(self, args, state, control, **kwargs):
        if self.writer is None:
            self.on_train_begin(args, state, control, **kwargs)
        loss = lr = None
        for entry in reversed(getattr(state, "log_history", []) or []):
            if loss is None and "loss" in entry:
                loss = entry["loss"]
            if lr is None and "learning_rate" in entry:
                lr = entry["learning_rate"]
            if loss is not None and lr is not None:
                break
        self.writer.step(state.global_step, loss=loss, tokens=self.tokens_per_step, lr=lr)

    def on_train_end(self, args, state, control, **kwargs):
        if self.writer is not None:
            self.writer.close()
        if self.measurements:
            cfg = {"batch": getattr(args, "per_device_train_batch_size", None),
                   "accum": getattr(args, "gradient_accumulation_steps", None),
                   "checkpointing": "full" if getattr(args, "gradient_checkpointing", False) else "none",
                   "precision": precision_label(args, kwargs.get("model"))}
            cfg.update(self.measurement_config)
            record_measurement(self.measurements, **{k: v for k, v in cfg.items() if v is not None})


def _selftest(argv):
    """Write a metrics file with made-up numbers (no torch): memtop must read it."""
    import argparse  # noqa: PLC0415

    ap = argparse.ArgumentParser(prog="memplan_callback.py --selftest",
                                 description="write a fake memtrain-v1 metrics file")
    ap.add_argument("out", nargs="?", help="the CSV to write")
    ap.add_argument("--metrics", help="the CSV to write (as memtop -- COMMAND passes it)")
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--delay", type=float, default=0.0, help="seconds between rows")
    a = ap.parse_args(argv)
    out = a.metrics or a.out
    if not out:
        ap.error("give OUT.csv or --metrics OUT.csv")
    gib = 1 << 30
    state = {"alloc": 0, "max": 0}

    def fake_memory():
        s = state["step"]
        state["alloc"] = int(6 * gib + (s % 5) * 64 * 2**20)  # weights + states + a sawtooth
        state["max"] = max(state["max"], state["alloc"] + 2 * gib)  # activations peak inside the step
        return state["alloc"], state["max"], state["alloc"] + 512 * 2**20

    fake_time = [0.0]

    def clock():  # real time when rows are spaced out, else 0.5 s per step
        return time.monotonic() if a.delay else fake_time[0]

    predicted = {"weights": 2 * gib, "gradients": 2 * gib, "optimizer": 4 * gib, "activations": 2 * gib,
                 "overhead": gib // 2, "total": int(8.2 * gib)}
    with MetricsWriter(out, predicted=predicted, steps=a.steps, budget_bytes=24 * gib, model="selftest-7b",
                       settings={"precision": "mixed-bf16", "optimizer": "adamw", "batch": 4, "seq": 2048},
                       device="cuda:0", memory=fake_memory, clock=clock) as mw:
        for s in range(1, a.steps + 1):
            state["step"] = s
            fake_time[0] += 0.5
            mw.step(s, loss=10.0 / (1 + 0.1 * s), tokens=4 * 2048, lr=3e-4)
            if a.delay:
                time.sleep(a.delay)
    print("memplan_callback: wrote %d rows to %s" % (a.steps, out))
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--selftest":
        sys.exit(_selftest(sys.argv[2:]))
    print(__doc__)
    sys.exit(0 if len(sys.argv) == 1 else 2)
