# pg_diag — every paper figure is a make target; SCALE=smoke (default, minutes on a CPU) or SCALE=paper.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
SCALE  ?= smoke
OUT    ?= results

.PHONY: setup test fig-ablation fig-trust-region fig-rewards table-2 table-3 fig-theorem figures bench hopper-1m clean

# Create the virtual environment and install the package with its test extras when missing or stale.
$(VENV)/.installed: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[test]"
	touch $@

setup: $(VENV)/.installed

test: setup
	$(PY) -m pytest -q

fig-ablation: setup
	$(VENV)/bin/pg-diag fig-ablation --scale $(SCALE) --out $(OUT)/fig-ablation-$(SCALE) --progress

fig-trust-region: setup
	$(VENV)/bin/pg-diag fig-trust-region --scale $(SCALE) --out $(OUT)/fig-trust-region-$(SCALE) --progress

# fig-rewards, table-2 and table-3 share one training study (reused from disk when it matches).
fig-rewards: setup
	$(VENV)/bin/pg-diag fig-rewards --scale $(SCALE) --out $(OUT)/algorithms-$(SCALE) --progress

table-2: setup
	$(VENV)/bin/pg-diag table-2 --scale $(SCALE) --out $(OUT)/algorithms-$(SCALE) --progress

table-3: setup
	$(VENV)/bin/pg-diag table-3 --scale $(SCALE) --out $(OUT)/algorithms-$(SCALE) --progress

fig-theorem: setup
	$(VENV)/bin/pg-diag fig-theorem --scale $(SCALE) --out $(OUT)/fig-theorem-$(SCALE)

figures: fig-ablation fig-trust-region fig-rewards table-2 table-3 fig-theorem

bench: setup
	$(PY) benchmarks/bench_physics.py
	$(PY) benchmarks/bench_throughput.py
	$(PY) benchmarks/bench_sweep.py

# One paper-configuration PPO agent on Hopper for 1M steps (native MuJoCo on a CPU).
hopper-1m: setup
	$(VENV)/bin/pg-diag train --preset ppo --task hopper --out $(OUT)/hopper-1m --progress

clean:
	rm -rf $(OUT) .pytest_cache
