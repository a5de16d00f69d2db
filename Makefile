# memplan — build, test, benchmark, install.
#   make                 build bin/memplan, bin/memtrain, bin/memtop
#   make check           unit + CLI tests (and fuzz-brief), then the same tests under ASan/UBSan
#   make bench           benchmarks (stable, parseable "bench:" lines)
#   make validate        memtrain measured against memplan's prediction, 20 configurations
#   make validate-pytorch  PyTorch (python3-torch, CPU) measured against memplan, every configuration
#   make validate-ddp    PyTorch data parallel (gloo, 2 and 4 ranks, DDP and ZeRO-1) per rank against memplan
#   make validate-published  memplan against published GPU measurements (tests/validation/published/)
#   make validate-pairwise  PyTorch DPO and CPO steps (CPU) measured again and compared with memplan
#   make validate-grpo   PyTorch GRPO rollout and steps (CPU) measured again and compared with memplan
#   make validate-pairwise-ddp  DPO and CPO per rank under DDP (CPU, gloo) measured again and compared with memplan
#                            and our own (tests/validation/gpu/, measured by its measure_cuda.py)
#   make install         PREFIX=/usr/local DESTDIR= MANPREFIX=$(PREFIX)/share/man
#   make fuzz            each libFuzzer harness (fuzz/) for FUZZ_SECONDS=120 (clang; into build-fuzz/)
#   make fuzz-brief      the same for FUZZ_BRIEF_SECONDS=5 each (make check runs it; skipped without clang)
#   make SANITIZE=address,undefined   a sanitizer build (into build-san/)
#   make MPI=no BUILD=build-nompi      memtrain without MPI (one process; found: mpicc or pkg-config ompi-c)

PREFIX    ?= /usr/local
MANPREFIX ?= $(PREFIX)/share/man
CC        ?= cc
OPT       ?= -O2
CFLAGS    ?=
LDFLAGS   ?=

ifdef SANITIZE
BUILD     ?= build-san
SANFLAGS  := -fsanitize=$(SANITIZE) -fno-omit-frame-pointer -fno-sanitize-recover=all
OPT       := -O1 -g
else
BUILD     ?= build
SANFLAGS  :=
endif
BIN       := $(BUILD)/bin

PKGS      := jansson ncursesw openblas
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
BLAS_LIBS  := $(shell pkg-config --libs openblas 2>/dev/null || echo -lopenblas)
CURSES_LIBS := $(shell pkg-config --libs ncursesw 2>/dev/null || echo -lncursesw -ltinfo)
# memplan needs no BLAS threads: GSL gets its small CBLAS there, OpenBLAS elsewhere.
PLAN_LIBS  := -lgsl -lgslcblas -ljansson -lcsv -lyaml -lm -lpthread
FULL_LIBS  := -lgsl $(BLAS_LIBS) $(CURSES_LIBS) -ljansson -lcsv -lyaml -lm -lpthread
# MPI (OpenMPI): memtrain trains data parallel under mpirun when found (MPI=no builds
# without it). From mpicc's wrapper flags, else pkg-config's ompi-c.
MPI       ?= yes
ifeq ($(MPI),yes)
MPI_CFLAGS := $(shell mpicc --showme:compile 2>/dev/null || pkg-config --cflags ompi-c 2>/dev/null)
MPI_LIBS   := $(shell mpicc --showme:link 2>/dev/null || pkg-config --libs ompi-c 2>/dev/null)
endif
ifneq ($(strip $(MPI_LIBS)),)
MPI_DEFS   := -DMT_HAVE_MPI $(MPI_CFLAGS)
endif
# what links the trainer (trainer/dist.c) links MPI
TRAIN_LIBS := $(FULL_LIBS) $(MPI_LIBS)

# Required flags come first; the user's CFLAGS are added, never replace them.
ALL_CFLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Wall -Wextra -Wshadow \
              -Wno-unused-parameter $(OPT) $(SANFLAGS) -Iplanner -Itrainer -Itui $(PKG_CFLAGS) $(MPI_DEFS) \
              -DMEMPLAN_DATADIR=\"$(PREFIX)/share/memplan/profiles\" $(CFLAGS)
# libcsv ships no .pc file.
LINK       := $(SANFLAGS) $(LDFLAGS)

LIB_SRC    := $(filter-out planner/cmd/%,$(wildcard planner/*/*.c))
CMD_SRC    := $(wildcard planner/cmd/*.c)
TRAIN_SRC  := $(filter-out trainer/memtrain.c,$(wildcard trainer/*.c))
TUI_SRC    := $(filter-out tui/memtop.c,$(wildcard tui/*.c))
TEST_SRC   := $(wildcard tests/test_*.c)

obj = $(patsubst %.c,$(BUILD)/obj/%.o,$(1))
LIB        := $(BUILD)/libmemplan.a
TRAIN_LIB  := $(BUILD)/libmemtrain.a
TUI_LIB    := $(BUILD)/libmemtop.a
# A command is built once its main file exists.
PROGS      := $(BIN)/memplan $(if $(wildcard trainer/memtrain.c),$(BIN)/memtrain) $(if $(wildcard tui/memtop.c),$(BIN)/memtop)
TESTS      := $(patsubst tests/%.c,$(BUILD)/tests/%,$(TEST_SRC))
# The allocation counter PyTorch runs with (LD_PRELOAD): never sanitized, since
# a sanitizer runtime cannot be preloaded into Python.
COUNTER    := $(BUILD)/lib/libmpcount.so
# Debian's python3-torch lives in the system Python; PYTORCH=no skips its tests.
PYTHON_TORCH ?= /usr/bin/python3
PYTORCH    ?= yes

.PHONY: all check test test-unit test-cli examples test-validate test-pytorch bench validate validate-pytorch validate-ddp \
        validate-pairwise validate-grpo validate-pairwise-ddp \
        validate-published test-published fuzz fuzz-brief fuzz-build \
        install uninstall clean
all: $(PROGS) $(TESTS) $(COUNTER)

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(LIB): $(call obj,$(LIB_SRC))
	@mkdir -p $(dir $@)
	@rm -f $@
	$(AR) rcs $@ $^
$(TRAIN_LIB): $(call obj,$(TRAIN_SRC))
	@mkdir -p $(dir $@)
	@rm -f $@
	$(AR) rcs $@ $^
$(TUI_LIB): $(call obj,$(TUI_SRC))
	@mkdir -p $(dir $@)
	@rm -f $@
	$(AR) rcs $@ $^

$(BIN)/memplan: $(call obj,$(CMD_SRC)) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LINK) $(PLAN_LIBS)
$(BIN)/memtrain: $(call obj,trainer/memtrain.c) $(TRAIN_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LINK) $(TRAIN_LIBS)
$(BIN)/memtop: $(call obj,tui/memtop.c) $(TUI_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LINK) $(FULL_LIBS)
$(BUILD)/tests/%: $(call obj,tests/%.c) $(TRAIN_LIB) $(TUI_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LINK) $(TRAIN_LIBS)

# Unit tests are C programs; CLI tests are shell scripts run against the built binaries.
test-unit: $(TESTS)
	@tests/run-unit.sh $(BUILD)
test-cli: $(PROGS)
	@tests/layering.sh
	@tests/run-cli.sh $(BIN)
	@tests/test_names.sh $(BIN)
	@# the section-5 pages list exactly the keys and columns the programs read and write
	@tests/test_man5.sh $(BIN)
	@# verdicts: host RAM, hints followed, the stack, one screen, 120-column tables (issue 33)
	@tests/test_verdicts.sh $(BIN)
	@tests/test_memtop_e2e.sh $(BIN)
	@# what strangers' files and planted paths can do (tests/hostile/): refused, nothing written
	@tests/hostile/run.sh $(BIN)
	@python3 tests/test_emit_hf.py $(BIN)
	@# the preference and RL methods' bundles: TRL's classes and keys, and trl.yaml read back by check
	@python3 tests/test_emit_trl.py $(BIN)
	@python3 tests/test_emit_torchtune.py $(BIN)
	@python3 tests/test_emit_torchtune_dpo.py $(BIN)
	@# the plan printed is the plan that runs: axolotl, LLaMA-Factory and memtrain files read back by check
	@python3 tests/test_emit_roundtrip.py $(BIN)
	@# memplan check on real configs (tests/data/configs), each against its written expectation
	@python3 tests/test_check.py $(BIN)
	@tests/test_emit_engines.sh $(BIN)
	@# data parallel on 2 and 4 ranks (mpirun --oversubscribe); skipped without MPI
	@tests/test_memtrain_mpi.sh $(BIN)
	@$(PYTHON_TORCH) tests/test_callback.py | tail -1

# rewrite the output shown under README's and the man pages' examples from real runs
examples: $(PROGS)
	python3 tests/examples.py --update --bin $(BIN)

test-validate: $(PROGS)
	@tests/validate.sh $(BIN) quick
# The PyTorch validation's quick set; once per check (its subject is memplan's
# arithmetic, which the sanitizer build adds nothing to).
test-pytorch: $(PROGS) $(COUNTER)
ifeq ($(PYTORCH)$(SANITIZE),yes)
	@tests/validation/run.sh $(PYTHON_TORCH) $(BIN) $(COUNTER) single --quick --out $(BUILD)/pytorch-quick.csv
	@# the chunked loss --emit hf writes, run as emitted: equal to the full cross-entropy
	@$(PYTHON_TORCH) tests/test_emit_hf_loss.py $(BIN)
	@# memtrain's preference losses against TRL's formulas in PyTorch, same model and batch
	@$(PYTHON_TORCH) tests/validation/memtrain_dpo_loss.py $(BIN) | tail -1
	@# data parallel, two configurations (~20 s): reported, failing only if a rank fails
	@tests/validation/run.sh $(PYTHON_TORCH) $(BIN) $(COUNTER) ddp --quick --out $(BUILD)/ddp-quick.csv
	@# the calibration flow on what was just measured: fit, write, load back
	@$(BIN)/memplan calibrate $(BUILD)/pytorch-quick.csv --framework pytorch-cpu \
	    -o $(BUILD)/pytorch-quick-profile.csv | tail -1
	@$(BIN)/memplan estimate --model gpt2 --batch 4 --seq 128 \
	    --framework $(BUILD)/pytorch-quick-profile.csv >/dev/null && echo "ok   the calibrated profile loads"
endif
# The published GPU measurements (under a second): the groups' figures, a report, not a gate.
test-published: $(BIN)/memplan
ifeq ($(SANITIZE),)
	@python3 tests/validation/published/compare.py $(BIN)/memplan --summary
	@# the preference and RL methods' published rows (methods.csv): a report, first contact kept
	@python3 tests/validation/published/methods_compare.py $(BIN)/memplan | grep "^all scored"
	@# transformers + PEFT measured on a GPU (committed; CI never runs the GPU): gated
	@python3 tests/validation/gpu/compare.py $(BIN)/memplan --summary
	@# DPO and CPO steps measured with PyTorch on the CPU (pairwise.py, committed): gated
	@python3 tests/validation/pairwise_compare.py --memplan $(BIN)/memplan | tail -1
	@# DPO and CPO per rank under DDP, measured with PyTorch on the CPU (pairwise_ddp.py, committed): gated
	@python3 tests/validation/pairwise_ddp_compare.py --memplan $(BIN)/memplan | tail -1
	@# an evaluation between steps measured with PyTorch on the CPU (eval_probe.py, committed): gated
	@python3 tests/validation/eval_compare.py --memplan $(BIN)/memplan | tail -1
	@# GRPO's step and rollout measured with PyTorch on the CPU (grpo.py, committed): gated
	@python3 tests/validation/grpo_compare.py --memplan $(BIN)/memplan | tail -1
	@# every Nth block checkpointed (torchtitan's layer SAC), measured on the CPU (committed): gated
	@python3 tests/validation/measured_compare.py tests/validation/ckpt_every_configs.csv \
	    tests/validation/ckpt_every_measurements.csv --memplan $(BIN)/memplan | tail -1
endif
# Then the fuzz harnesses, briefly, once per check (their build is sanitized already),
# after the other tests, whose timings two fuzzers at once would skew.
test: test-unit test-cli test-validate test-pytorch test-published
ifeq ($(SANITIZE),)
	@$(MAKE) -s --no-print-directory fuzz-brief
endif

$(COUNTER): tests/validation/mpcount.c
	@mkdir -p $(dir $@)
	$(CC) -std=c11 -O2 -Wall -Wextra -shared -fPIC -o $@ $<

# Tests in the normal build, then again under AddressSanitizer and UBSan.
check:
	$(MAKE) test
	$(MAKE) SANITIZE=address,undefined test

bench: $(PROGS) $(patsubst bench/%.c,$(BUILD)/bench/%,$(wildcard bench/bench_*.c))
	@bench/run.sh $(BUILD)
$(BUILD)/bench/%: $(call obj,bench/%.c) $(TRAIN_LIB) $(LIB)
	@mkdir -p $(dir $@)
	$(CC) -o $@ $^ $(LINK) $(TRAIN_LIBS)

# ---------- fuzzing: libFuzzer harnesses (fuzz/), built by clang into build-fuzz/ ----------
# Every object is clang's, instrumented for the fuzzer's coverage and ASan/UBSan (no gcc
# object meets the fuzzer runtime); each harness links the parsers it feeds.
FUZZ_CC    ?= clang
FUZZ       ?= build-fuzz
FUZZ_SECONDS ?= 120
FUZZ_BRIEF_SECONDS ?= 5
FUZZ_SAN   := -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer -g -O1
# (clang, unlike gcc, reads the vocabulary's {{row}} initialisers as missing fields)
FUZZ_CFLAGS := -std=c11 -D_POSIX_C_SOURCE=200809L -D_DEFAULT_SOURCE -Wall -Wextra -Wshadow -Wno-unused-parameter \
              -Wno-missing-field-initializers \
              $(FUZZ_SAN) -Iplanner -Itrainer -Itui -Ifuzz $(shell pkg-config --cflags jansson 2>/dev/null) \
              -DMEMPLAN_DATADIR=\"$(PREFIX)/share/memplan/profiles\"
FUZZ_NAMES := $(patsubst fuzz/fuzz_%.c,%,$(wildcard fuzz/fuzz_*.c))
FUZZ_BINS  := $(patsubst %,$(FUZZ)/bin/fuzz_%,$(FUZZ_NAMES))
FUZZ_LIB   := $(FUZZ)/libfuzzed.a
FUZZ_LIB_SRC := $(LIB_SRC) tui/metrics.c tui/history.c $(TRAIN_SRC) \
                tui/runset.c tui/follow.c tui/ranks.c tui/snapshot.c tui/snapshot_text.c tui/rank_snapshot.c tui/format.c \
                $(filter-out planner/cmd/memplan.c,$(CMD_SRC))
# Does clang link a libFuzzer program here?
FUZZ_PROBE = printf 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }\n' | \
             $(FUZZ_CC) -fsanitize=fuzzer -x c - -o $(FUZZ)/probe >/dev/null 2>&1

$(FUZZ)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -MMD -MP -c $< -o $@
$(FUZZ_LIB): $(patsubst %.c,$(FUZZ)/obj/%.o,$(FUZZ_LIB_SRC))
	@rm -f $@
	$(AR) rcs $@ $^
$(FUZZ)/bin/fuzz_%: $(FUZZ)/obj/fuzz/fuzz_%.o $(FUZZ_LIB)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) $(FUZZ_SAN) -fsanitize=fuzzer -o $@ $^ $(PLAN_LIBS)
fuzz-build: $(FUZZ_BINS)

fuzz:
	@mkdir -p $(FUZZ)
	@$(FUZZ_PROBE) || { echo "fuzz: clang with libFuzzer not found (FUZZ_CC=$(FUZZ_CC))"; exit 1; }
	@$(MAKE) -s --no-print-directory fuzz-build
	@FUZZ_RATE=1 fuzz/run.sh $(FUZZ) $(FUZZ_SECONDS)
fuzz-brief:
	@mkdir -p $(FUZZ)
	@if $(FUZZ_PROBE); then \
	    $(MAKE) -s --no-print-directory fuzz-build && fuzz/run.sh $(FUZZ) $(FUZZ_BRIEF_SECONDS); \
	else echo "skip fuzz: clang with libFuzzer not found"; fi

validate: $(PROGS)
	@tests/validate.sh $(BIN) full
validate-published: $(BIN)/memplan
	@python3 tests/validation/published/compare.py $(BIN)/memplan
	@python3 tests/validation/published/methods_compare.py $(BIN)/memplan
	@python3 tests/validation/gpu/compare.py $(BIN)/memplan
validate-pytorch: $(PROGS) $(COUNTER) validate-pairwise validate-grpo validate-pairwise-ddp
	@tests/validation/run.sh $(PYTHON_TORCH) $(BIN) $(COUNTER) single --out $(BUILD)/pytorch-measurements.csv
	@$(PYTHON_TORCH) tests/validation/eval_probe.py run --counter $(abspath $(COUNTER)) --out $(BUILD)/eval-probe.csv >/dev/null
	@python3 tests/validation/eval_compare.py --memplan $(BIN)/memplan --csv $(BUILD)/eval-probe.csv
# Preference methods: measure DPO, SimPO, CPO and reward steps again (pairwise.py,
# about 2 minutes) into the build folder and compare memplan with them.
validate-pairwise: $(PROGS) $(COUNTER)
	@$(PYTHON_TORCH) tests/validation/pairwise.py run --counter $(abspath $(COUNTER)) \
	    --out $(BUILD)/pairwise-measurements.csv
	@python3 tests/validation/pairwise_compare.py --memplan $(BIN)/memplan --csv $(BUILD)/pairwise-measurements.csv
# DPO and CPO per rank under DDP: measure again (pairwise_ddp.py, about a minute on
# 2 idle cores) into the build folder and compare memplan with them.
validate-pairwise-ddp: $(PROGS) $(COUNTER)
	@$(PYTHON_TORCH) tests/validation/pairwise_ddp.py run --counter $(abspath $(COUNTER)) \
	    --out $(BUILD)/pairwise-ddp-measurements.csv
	@python3 tests/validation/pairwise_ddp_compare.py --memplan $(BIN)/memplan --csv $(BUILD)/pairwise-ddp-measurements.csv
# GRPO: measure the rollout and the step again (grpo.py, about a minute) and compare.
validate-grpo: $(PROGS) $(COUNTER)
	@$(PYTHON_TORCH) tests/validation/grpo.py run --counter $(abspath $(COUNTER)) \
	    --out $(BUILD)/grpo-measurements.csv
	@python3 tests/validation/grpo_compare.py --memplan $(BIN)/memplan --csv $(BUILD)/grpo-measurements.csv
# Reports memplan's per-rank error without judging it (the planner does not model
# DDP's buckets yet); fails only when a run fails.
validate-ddp: $(PROGS) $(COUNTER)
	@tests/validation/run.sh $(PYTHON_TORCH) $(BIN) $(COUNTER) ddp --out $(BUILD)/ddp-measurements.csv

install: $(PROGS)
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(MANPREFIX)/man1 $(DESTDIR)$(MANPREFIX)/man5
	install -m 755 $(PROGS) $(DESTDIR)$(PREFIX)/bin/
	install -m 644 $(wildcard man/*.1) $(DESTDIR)$(MANPREFIX)/man1/
	install -m 644 $(wildcard man/*.5) $(DESTDIR)$(MANPREFIX)/man5/
	install -d $(DESTDIR)$(PREFIX)/share/memplan/profiles
	install -m 644 profiles/*.csv $(DESTDIR)$(PREFIX)/share/memplan/profiles/
uninstall:
	rm -f $(addprefix $(DESTDIR)$(PREFIX)/bin/,memplan memtrain memtop)
	rm -f $(addprefix $(DESTDIR)$(MANPREFIX)/man1/,memplan.1 memtrain.1 memtop.1)
	rm -f $(addprefix $(DESTDIR)$(MANPREFIX)/man5/,memtrain.conf.5 memplan-profiles.5 memtrain-metrics.5)
	rm -rf $(DESTDIR)$(PREFIX)/share/memplan

clean:
	rm -rf build build-san build-fuzz

-include $(shell find $(BUILD)/obj $(FUZZ)/obj -name '*.d' 2>/dev/null)
