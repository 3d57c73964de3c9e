# pgdiag — every paper figure is a make target; SCALE=smoke (default, minutes on a CPU), SCALE=mid (Hopper at
# the papers' shape on a CPU: the closer look's diagnostics, the IM ablation and tables) or SCALE=paper.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
SCALE  ?= smoke
OUT    ?= results
# FROM=DIR: redraw a figure/table from the study saved in DIR (a previous output directory) without training,
# e.g. make fig-ablation FROM=results/ablation-smoke
FROM   ?=
# ARGS="...": more options for the target's pgdiag command (see `pgdiag TARGET --help`), e.g.
# make fig-ablation SCALE=paper ARGS="--set solver=fast --task hopper"; with FROM, the redraw's own
# (make table-2 FROM=results/algorithms-paper ARGS="--statistic max")
ARGS   ?=

# The figure and table targets, each with its study's directory and options: written from the one table of
# targets, pgdiag/experiments/targets.py, as pgdiag/studies/ registers them (`.venv/bin/python -m
# pgdiag.experiments.targets > targets.mk` after changing them; tests/test_targets.py checks that it is current).
include targets.mk

.PHONY: setup docs test test-newest test-isa package-check target-smoke target-mid $(STUDY_TARGETS) closer-look-report closer-look-tasks implementation-matters-report replication figures bench accelerator-report \
        hopper-1m colab-links clean

# Create the virtual environment and install the package with its test extras when missing or stale.
$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	$(PY) -m pgdiag.envs.native_ffi
	touch $@

setup: $(VENV)/.installed

# The documentation site from docs/ (MkDocs, Material theme, the API from the docstrings) into site/; warnings
# are errors (mkdocs.yml: strict). Open site/index.html. First the pages' generated parts are rewritten from the
# code (the settings reference from the settings' declarations, each target page's scales from its Scale records:
# tools/gen_docs.py; tests/test_docs.py checks the committed pages are current). Then what the build does
# not see: reST roles in the docstrings (`$(PY) tools/docstring_roles.py` rewrites them into cross-references) or
# left in the pages, and public names (__all__ of pgdiag, pgdiag.diagnostics) missing from the API reference or
# without a docstring.
$(VENV)/.docs-installed: $(VENV)/.installed
	$(PY) -m pip install --quiet -e ".[docs]"
	touch $@

docs: $(VENV)/.docs-installed
	$(PY) tools/gen_docs.py
	$(PY) tools/docstring_roles.py --check
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet
	$(PY) tools/check_api_docs.py site
	@test -f site/search/search_index.js || { echo "docs: no site/search/search_index.js: search would not work from disk (file://)"; exit 1; }

# Every target at the smoke scale, alone and in order, timed on this host: its figure and time on its page
# (docs/targets/img/, docs/targets/smoke.json), then the pages regenerated.
target-smoke: $(VENV)/.installed
	$(PY) tools/target_smoke.py
	$(PY) tools/gen_docs.py

# Every target at the mid scale timed on this host, in the reports' order into one OUT (their shared runs trained
# once): the closer look's, then the IM report's, then solver-compare (docs/targets/mid.json); hours on 2 cores.
target-mid: $(VENV)/.installed
	$(PY) tools/target_smoke.py --scale mid --targets $(CLOSER_LOOK_TARGETS) fig-trust-region fig-theorem \
	  fig-ablation table-2 table-3 fig-rewards solver-compare
	$(PY) tools/gen_docs.py

# The wheel and sdist build (python -m build), the native handler's source inside both, and the wheel installs into
# a clean virtual environment whose `pgdiag` command runs (CI runs it).
package-check: $(VENV)/.installed
	rm -rf dist build/package-venv
	$(PY) -m pip install --quiet build
	$(PY) -m build --outdir dist . > build-package.log 2>&1 || { tail -20 build-package.log; exit 1; }
	unzip -l dist/pgdiag_rl-*.whl | grep -q "pgdiag/envs/native_step.cc"
	tar tzf dist/pgdiag_rl-*.tar.gz | grep -q "pgdiag/envs/native_step.cc"
	python3 -m venv build/package-venv
	build/package-venv/bin/python -m pip install --quiet --upgrade pip   # as the README says: a fresh venv's pip
	build/package-venv/bin/python -m pip install --quiet "pgdiag-rl @ git+file://$(CURDIR)"   # the README's line
	$(PY) tools/remote_install.py build/package-venv/bin/python   # its line for a remote, served on 127.0.0.1
	unzip -l dist/pgdiag_rl-*.whl > /dev/null
	cd build && package-venv/bin/pgdiag tasks > /dev/null && package-venv/bin/python -c "import pgdiag; print('package-check: pgdiag', pgdiag.__version__, 'from', pgdiag.__file__)"

# Test files run on TEST_WORKERS processes (default: one per core); a file's tests stay in one process, so its
# fixtures (trained runs, compiled programs) are made once. Most of the suite's time is XLA compiling small
# programs, so `make test` asks LLVM not to optimize them and XLA:CPU to emit its fusions with the elemental
# emitter rather than the MLIR fusion emitters (TEST_XLA_FLAGS; together about half the compile time; the small
# shapes run about as fast): XLA's own passes (fusion, layout) still run. Optimized code with XLA's default
# emitters is what test-newest and test-isa run, and what a user's XLA_FLAGS (when set) asks for here too.
TEST_WORKERS   ?= auto
TEST_XLA_FLAGS ?= --xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false
test: setup
	XLA_FLAGS="$${XLA_FLAGS-$(TEST_XLA_FLAGS)}" $(PY) -m pytest -q -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder

# The core of the suite on the newest releases that resolve. jax >= 0.11 needs Python >= 3.12, so this uses a
# Python 3.12 when the machine has one (NEWEST_PYTHON=... to choose) in its own environment, .venv-newest.
NEWEST_PYTHON ?= $(firstword $(wildcard $(HOME)/.pyenv/versions/3.12*/bin/python3) $(shell command -v python3.12))
NEWEST_TESTS  ?= tests/test_objectives.py tests/test_normalize.py tests/test_rollout.py tests/test_stages.py \
                 tests/test_trpo.py tests/test_sweep.py tests/test_resume.py tests/test_config.py tests/test_lqr.py \
                 tests/test_diagnostics.py tests/test_native_ffi.py tests/test_cpu_random.py
test-newest:
	@if [ -z "$(NEWEST_PYTHON)" ]; then echo "test-newest: no Python >= 3.12 here; set NEWEST_PYTHON=..."; exit 0; fi; \
	test -x .venv-newest/bin/python || $(NEWEST_PYTHON) -m venv .venv-newest; \
	.venv-newest/bin/python -m pip install --quiet --upgrade pip && \
	.venv-newest/bin/python -m pip install --quiet --upgrade --upgrade-strategy eager -e ".[test]" && \
	.venv-newest/bin/python -c "import jax, flax, optax, orbax.checkpoint, mujoco; print('newest:', 'jax', jax.__version__, 'flax', flax.__version__, 'optax', optax.__version__, 'mujoco', mujoco.__version__)" && \
	.venv-newest/bin/python -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder $(NEWEST_TESTS)

# The numerics-sensitive tests (tolerances derived from float32 rounding, comparisons between compiled programs,
# statistical bounds) under other CPUs' floating-point paths: XLA's code for each instruction-set cap in ISAS
# ("default" = this CPU's own), e.g. make test-isa ISAS="AVX2 SSE4_2".
ISAS          ?= default AVX2 SSE4_2
KNOWN_ISAS    := default SSE4_2 AVX AVX2 AVX512F AVX512_VNNI AVX512_BF16 AMX
NUMERIC_TESTS ?= tests/test_objectives.py tests/test_networks.py tests/test_normalize.py tests/test_stages.py \
                 tests/test_trpo.py tests/test_value.py tests/test_stats.py tests/test_lqr.py tests/test_sweep.py \
                 tests/test_experiments.py tests/test_landscape.py tests/test_diagnostics.py tests/test_devices.py \
                 tests/test_distributed.py tests/test_algorithms.py tests/test_gym_models.py tests/test_native_ffi.py \
                 tests/test_split.py tests/test_exact_answers.py tests/test_physics.py tests/test_resume.py
test-isa: setup
	@for isa in $(ISAS); do case " $(KNOWN_ISAS) " in *" $$isa "*) ;; *) \
	  echo "test-isa: unknown instruction set '$$isa' in ISAS; choose from: $(KNOWN_ISAS)" >&2; exit 2;; esac; done
	@for isa in $(ISAS); do \
	  flags="$$(printf '%s\n' $$XLA_FLAGS | grep -v -e xla_cpu_max_isa -e '^$$' | tr '\n' ' ' | sed 's/ *$$//')"; \
	  if [ "$$isa" != default ]; then flags="$${flags:+$$flags }--xla_cpu_max_isa=$$isa"; fi; \
	  echo "== $$isa: XLA_FLAGS=$$flags"; \
	  XLA_FLAGS="$$flags" $(PY) -m pytest -q -p no:cacheprovider -n $(TEST_WORKERS) --dist loadfile \
	    --no-loadscope-reorder $(NUMERIC_TESTS) || exit 1; done

# $(call study,DIR-NAME,EXTRA): train into $(OUT)/DIR-NAME-$(SCALE), or with FROM redraw from $(FROM) only.
study = $(if $(FROM),--from $(FROM) $(ARGS),--scale $(SCALE) --out $(OUT)/$(1)-$(SCALE) $(2) $(ARGS))

# Each target trains into $(OUT)/STUDY-$(SCALE), where targets sharing a study share its training (fig-rewards,
# table-2 and table-3; the three gradient figures; the two landscapes), reused from disk when it matches.
$(STUDY_TARGETS): setup
	$(VENV)/bin/pgdiag $@ $(call study,$($@_STUDY),$($@_ARGS))

# CL §5's claims checked on the diagnostic studies of this SCALE (each trained and measured unless already on
# disk): one page, $(OUT)/closer-look-report-$(SCALE)/report.md, with every figure and each claim's CI and verdict.
closer-look-report: $(CLOSER_LOOK_TARGETS) fig-trust-region fig-theorem
	$(VENV)/bin/pgdiag report --from $(OUT) --scale $(SCALE) --out $(OUT)/closer-look-report-$(SCALE)

# CL's claims that Hopper cannot carry, on the papers' own tasks at the mid scale's shape (SCALE=tasks: fig-value
# on Walker2d, fig-trust-region and fig-landscape-concentration on Humanoid), then one page over the mid scale's
# studies and these: $(OUT)/closer-look-report-mid+tasks/report.md (run `make closer-look-report SCALE=mid` first
# for the mid half; what is missing, the page names).
closer-look-tasks: setup
	$(MAKE) --no-print-directory fig-value fig-trust-region fig-landscape-concentration SCALE=tasks OUT=$(OUT)
	$(VENV)/bin/pgdiag report --from $(OUT) --scale mid,tasks --out $(OUT)/closer-look-report-mid+tasks

# IM's claims (the ablation's effects, Tables 2/3, trust regions, Theorem 5.1) on this SCALE's studies, likewise;
# at SCALE=mid every claim gets its 5 agents per group and table-2's PPO, PPO-M and TRPO are fig-trust-region's
# runs (trained once, into $(OUT)/runs): under 45 minutes on a 2-core CPU (docs/plans.md).
implementation-matters-report: fig-ablation table-2 fig-trust-region fig-theorem
	$(VENV)/bin/pgdiag report --paper im --from $(OUT) --scale $(SCALE) \
	  --out $(OUT)/implementation-matters-report-$(SCALE)

# The replication (docs/replication.md): one part of both papers' claims at the papers' own settings — Gym's
# models, CL's 488 iterations, the agents each section needs — trained and measured into RUNS (outside the
# repository; an interrupted part resumes), then its tables and figures published into replication/PART/ and the
# page written again. PART=trust-regions (Humanoid), value (Walker2d, Hopper), brax-pair, trust-regions-others,
# value-humanoid, baselines, baselines-humanoid, gradients-cpu, landscapes or ablation-walker2d (`pgdiag replication
# plan` plans every part, docs/replication.md states the plans).
PART ?= trust-regions
RUNS ?= ../pgdiag-runs/replication
replication: setup
	$(VENV)/bin/pgdiag replication run $(PART) --runs $(RUNS)
	$(VENV)/bin/pgdiag replication page

figures: $(filter-out solver-compare,$(STUDY_TARGETS))

bench: setup
	$(PY) benchmarks/bench_physics.py
	$(PY) benchmarks/bench_throughput.py
	$(PY) benchmarks/bench_sweep.py
	$(PY) benchmarks/bench_compile.py
	$(PY) benchmarks/bench_gradients.py
	$(PY) benchmarks/bench_landscape.py
	$(PY) benchmarks/bench_solver.py
	$(PY) benchmarks/bench_stages.py
	$(PY) benchmarks/bench_studies.py

# What the paper-scale targets cost on this host (crossover, every training program's first two iterations,
# throughput, the diagnostics' programs in first chunks, both papers' reports planned here): one Markdown report
# under benchmarks/results/ within BUDGET minutes (30). SCALE=tiny: seconds, on a CPU. ARGS: more options, e.g. a piece of a report measured in
# short slots: ARGS="--sections diagnostics --merge benchmarks/results/accelerator-report-....json".
BUDGET ?= 30
accelerator-report: setup
	$(PY) benchmarks/accelerator_report.py --scale $(if $(filter tiny,$(SCALE)),tiny,paper) --budget-minutes $(BUDGET) \
	  $(ARGS)

# One paper-configuration PPO agent on Hopper for 1M steps (native MuJoCo on a CPU).
hopper-1m: setup
	$(VENV)/bin/pgdiag train --preset ppo --task hopper --out $(OUT)/hopper-1m --progress

# The notebooks' "Open in Colab" badges and install source, from `git remote get-url origin` or REPOSITORY=OWNER/NAME.
colab-links: setup
	$(PY) tools/colab_links.py $(if $(REPOSITORY),--repository $(REPOSITORY))

clean:
	rm -rf $(OUT) .pytest_cache
