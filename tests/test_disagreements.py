"""What a disagreement needs (pgdiag.experiments.disagreements): a finding measured at the paper's settings that
does not reproduce gets its curve, the distance its interval is from turning, and its Brax-model pair."""

import os
import types

import numpy as np
import pandas as pd

from pgdiag.experiments import claims, disagreements, findings


def trpo_max_kl(model: str, level: float, length: int = 488, late: float | None = None) -> pd.DataFrame:
    """CL Fig 9's TRPO on Humanoid over ``length`` iterations: 8 agents whose log10(max KL / δ) sits at
    ``level`` + agent/100 at every iteration (``late`` + agent/100 from iteration 100 on, where given)."""
    its = np.arange(1, length, 10)
    at = lambda i: level if late is None or i < 100 else late  # noqa: E731
    return pd.DataFrame([dict(evidence="tr_max_kl_orders", task="humanoid", label="trpo", agent=str(a),
                              value=at(i) + a / 100, iteration=float(i), progress=i / length, lr_share=np.nan,
                              pairs=np.nan, run_iterations=float(length), model=model)
                         for a in range(8) for i in its])


def test_the_turn_is_the_intervals_end_on_the_wrong_side_of_the_rule_by_hand():
    claim = claims.by_key("max-kl-orders-above-bound")   # > 2
    row = types.SimpleNamespace(low=0.75, high=0.9)
    assert disagreements.turn(claim, row) == ("it would hold if the interval [0.75, 0.9] lay wholly above 2: its "
                                              "lower end is 1.25 below it")
    claim = claims.by_key("no-baseline-order-worse")    # < −0.8: the upper end, −0.25, is 0.55 above it
    row = types.SimpleNamespace(low=-0.6, high=-0.25)
    assert disagreements.turn(claim, row) == ("it would hold if the interval [−0.6, −0.25] lay wholly below −0.8: "
                                              "its upper end is 0.55 above it")


def test_a_finding_that_does_not_reproduce_gets_its_curve_turn_and_model_pair(tmp_path):
    """TRPO's max KL at 10^0.80–0.87 δ over Gym's first 100 iterations and 10^1.20–1.27 δ after, median over
    iterations 10^1.20–1.27 (39 of its 49 read iterations are late): the paper's "several orders of magnitude"
    (rule > 2) does not reproduce. Brax's model over 100 iterations, at 10^0.50–0.57, is the pair, read against
    Gym's first 100: median agents 0.5 + 3.5/100 and 0.8 + 3.5/100."""
    ev = pd.concat([trpo_max_kl("gym", 0.8, late=1.2), trpo_max_kl("brax", 0.5, length=100)], ignore_index=True)
    results = claims.evaluate(ev[ev.model == "gym"], paper="CL")
    found = findings.findings(results, "CL")
    assert found.set_index("claim").outcome["max-kl-orders-above-bound"] == "not reproduced"
    lines = disagreements.section(found, results, ev, "replication", figures=str(tmp_path))
    text = "\n".join(lines)
    assert "#### `max-kl-orders-above-bound` does not reproduce" in text
    assert "![max-kl-orders-above-bound: tr_max_kl_orders per iteration](replication/max-kl-orders-above-bound.png)" \
        in text
    assert "lay wholly above 2" in text   # the agents' medians are 1.20–1.27, so the interval is below 1.3
    assert ("at 100 iterations on both models, the median agent reads 0.835 on Gym's humanoid (8 agents, its "
            "first 100 iterations) and 0.535 on Brax's (8 agents): neither meets the rule (> 2) at this length, so "
            "the model does not explain it there") in text
    assert os.path.getsize(tmp_path / "max-kl-orders-above-bound.png") > 5_000
    # Brax's agents at 10^2.5: the model could explain it
    ev = pd.concat([trpo_max_kl("gym", 0.8, late=1.2), trpo_max_kl("brax", 2.5, length=100)], ignore_index=True)
    row = results[(results.claim == "max-kl-orders-above-bound") & (results.level == "")].iloc[0]
    assert disagreements.model_pair(claims.by_key("max-kl-orders-above-bound"), ev, row).endswith(
        "2.54 on Brax's (8 agents): Brax's model meets the rule where Gym's does not, so the model could explain it")
