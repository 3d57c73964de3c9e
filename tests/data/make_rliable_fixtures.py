"""rliable's own numbers on fixed score tables: tests/data/rliable_fixtures.json, read by tests/test_aggregates.py.

Run where rliable 1.2.0 runs (it fails at import under pandas 3): a virtual environment of its own with
`pip install "rliable==1.2.0" "pandas<3" "arch<7.3" "numpy<2.3"`, then `python tests/data/make_rliable_fixtures.py`.
"""
import json
import os
import numpy as np
from rliable import library as rly, metrics

rng = np.random.default_rng(20211127)
tables = {
    "a": np.round(rng.normal(0.6, 0.3, size=(5, 3)), 6),
    "b": np.round(rng.lognormal(-0.5, 0.6, size=(5, 3)), 6),
    "c": np.round(rng.integers(0, 4, size=(7, 4)) / 3.0, 6),      # ties
    "d": np.round(rng.integers(0, 4, size=(7, 4)) / 3.0, 6),
}
out = {"tables": {k: v.tolist() for k, v in tables.items()}, "estimates": {}, "intervals": {}, "reps": 20000}
fns = {"median": metrics.aggregate_median, "iqm": metrics.aggregate_iqm, "mean": metrics.aggregate_mean,
       "optimality_gap": metrics.aggregate_optimality_gap}
for name, f in fns.items():
    est, ci = rly.get_interval_estimates({k: v for k, v in tables.items()}, lambda x, f=f: np.array([f(x)]),
                                         reps=out["reps"], random_state=np.random.RandomState(0))
    out["estimates"][name] = {k: float(v[0]) for k, v in est.items()}
    out["intervals"][name] = {k: [float(v[0][0]), float(v[1][0])] for k, v in ci.items()}
pairs = {"c,d": (tables["c"], tables["d"]), "a,b": (tables["a"], tables["b"])}
est, ci = rly.get_interval_estimates({k: v for k, v in pairs.items()}, metrics.probability_of_improvement,
                                     reps=out["reps"], random_state=np.random.RandomState(0))
out["improvement"] = {k: {"value": float(np.ravel(est[k])[0]), "interval": [float(np.ravel(ci[k])[0]), float(np.ravel(ci[k])[1])]}
                      for k in pairs}
taus = np.linspace(0.0, 1.5, 7)
prof, prof_ci = rly.create_performance_profile({k: v for k, v in tables.items()}, taus, reps=out["reps"])
out["profile"] = {"taus": taus.tolist(),
                  **{k: {"value": prof[k].tolist(), "low": prof_ci[k][0].tolist(), "high": prof_ci[k][1].tolist()}
                     for k in tables}}
json.dump(out, open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "rliable_fixtures.json"), "w"), indent=1)
print("ok")
