# pg_diag — every paper figure is a make target; SCALE=smoke (default, minutes on a CPU) or SCALE=paper.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
SCALE  ?= smoke
OUT    ?= results

.PHONY: setup test fig-ablation bench clean

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

bench: setup
	$(PY) benchmarks/bench_throughput.py
	$(PY) benchmarks/bench_sweep.py

clean:
	rm -rf $(OUT) .pytest_cache
