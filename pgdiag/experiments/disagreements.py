"""What a disagreement needs: for each finding the replication measured at the paper's settings and did not
reproduce, the curve behind it, what would turn the verdict, and whether the model could explain it.

Written by the replication page ([`pgdiag.experiments.replication_page`][pgdiag.experiments.replication_page])
from the published evidence alone: the curve is the claim's evidence series per iteration (each algorithm's median
agent with its interquartile band; one point per agent where the series has no iteration), the turn is the rule
against the interval the test read, and the model pair is the same statistic on Brax's model and on Gym's, read at
one run length, where a published part measured Brax's.
"""

from __future__ import annotations

import os

import numpy as np

from pgdiag.experiments import claims as claim_specs
from pgdiag.experiments.figures import pyplot, save
from pgdiag.experiments.recorded import fmt


def turn(claim, row) -> str:
    """What would turn the test of ``row`` (a claims row: value, low, high) under ``claim``'s rule: the interval
    wholly on the rule's side, and how far its nearest end is from that."""
    if not np.isfinite([row.low, row.high]).all():
        return "its interval could not be read"
    if claim.test == "within":
        lo, hi = claim.threshold
        return (f"it would hold if the interval [{fmt(row.low)}, {fmt(row.high)}] lay within [{fmt(lo)}, {fmt(hi)}] "
                f"(its ends are {fmt(max(lo - row.low, 0))} below and {fmt(max(row.high - hi, 0))} above)")
    if claim.test == "<":
        return (f"it would hold if the interval [{fmt(row.low)}, {fmt(row.high)}] lay wholly below "
                f"{fmt(claim.threshold)}: its upper end is {fmt(row.high - claim.threshold)} above it")
    return (f"it would hold if the interval [{fmt(row.low)}, {fmt(row.high)}] lay wholly above {fmt(claim.threshold)}: "
            f"its lower end is {fmt(claim.threshold - row.low)} below it")


def model_pair(claim, ev, row) -> str:
    """The same statistic on Brax's model (same task and algorithm), where a published part holds it, read at one
    length: where Brax's run is shorter, Gym's agents are read over its iterations too (each agent's value
    as the claim reduces it, over the claim's point of training)."""
    if "model" not in ev.columns:
        return "no Brax-model pair is published"
    same = ev[(ev.evidence == claim.evidence) & (ev.task == row.task) & (ev.label == row.label)]
    brax = same[same.model == "brax"]
    if brax.empty:
        return (f"no Brax-model pair is published: Gym's {row.task} is what the paper trained; Brax's model at the "
                f"same run length would show whether the model explains the difference")
    length = _length(brax)
    gym = same[same.model == "gym"]
    if length is not None and "iteration" in gym.columns:
        gym = gym[gym.iteration.isna() | (gym.iteration < length)]
    g, b = (_agents(claim, x) for x in (gym, brax))
    at = f"{length} iterations" if length is not None else "run length not recorded"
    if not (len(g) and len(b)):
        return f"on Brax's {row.task} ({at}) no agent was read"
    gm, bm = float(np.median(g)), float(np.median(b))
    return (f"at {at} on both models, the median agent reads {fmt(gm)} on Gym's {row.task} ({len(g)} agents, its "
            f"first {at}) and {fmt(bm)} on Brax's ({len(b)} agents): {_reading(claim, gm, bm)}")


def _reading(claim, gym: float, brax: float) -> str:
    """Whether the model could explain the disagreement, from the two median agents against the rule."""
    if claim.test == "within":
        return "the model pair is shown, not read against the band"
    meets = (lambda v: v > claim.threshold) if claim.test == ">" else (lambda v: v < claim.threshold)  # noqa: E731
    if meets(brax) and not meets(gym):
        return "Brax's model meets the rule where Gym's does not, so the model could explain it"
    if meets(brax) == meets(gym):
        return (f"{'both meet' if meets(gym) else 'neither meets'} the rule ({claim.rule()}) at this length, so the "
                f"model does not explain it there")
    return "Gym's model meets the rule at this length and Brax's does not"


def _length(rows) -> int | None:
    its = rows.run_iterations.dropna() if "run_iterations" in rows.columns else []
    return int(its.max()) if len(its) else None


def _agents(claim, rows) -> np.ndarray:
    """Each agent's value of ``rows`` as the claim reads it: over its point of training, reduced as it says."""
    from pgdiag.experiments.claim_tests import per_agent
    from pgdiag.experiments.scopes import in_window

    values = per_agent(rows[in_window(rows, claim.scope.window)], claim.within)
    return values[~np.isnan(values)]


def _series(claim, ev):
    """The claim's evidence on Gym's models and, where its figure names tasks, on those alone."""
    keep = (ev.evidence == claim.evidence) & ((ev.model == "gym") if "model" in ev.columns else True)
    return ev[keep & (ev.task.isin(claim.scope.tasks) if claim.scope.tasks else True)]


def curve(claim, ev, path: str) -> str:
    """The claim's evidence per iteration (median agent and quartiles per algorithm and task) at ``path``."""
    series = _series(claim, ev)
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    for (task, label), part in series.groupby(["task", "label"]):
        if part.iteration.notna().any():
            per_it = part.groupby("iteration").value
            q = per_it.quantile([0.25, 0.5, 0.75]).unstack()
            line, = ax.plot(q.index, q[0.5], label=f"{task} {label} (median agent)")
            ax.fill_between(q.index, q[0.25], q[0.75], alpha=0.2, color=line.get_color())
        else:
            values = part.groupby("agent").value.mean()
            ax.plot([label] * len(values), values, "o", alpha=0.6, label=f"{task} {label} (agents)")
    if claim.test != "within":
        ax.axhline(claim.threshold, color="black", lw=0.8, ls="--", label=f"the rule: {claim.rule()}")
    ax.set_xlabel("iteration")
    ax.set_ylabel(claim.evidence)
    return save(fig, path, title=f"{claim.key}: {claim.statistic}", legend=True)


def section(found, results, ev, link: str, figures: str | None = None) -> list:
    """Markdown lines, one block per finding not reproduced at the paper's settings, each curve linked as
    ``link/<claim>.png`` (and written under ``figures``, where given)."""
    lines = []
    for f in found[found.outcome == "not reproduced"].itertuples(index=False):
        claim = claim_specs.by_key(f.claim)
        rows = results[(results.claim == f.claim) & (results.level == "") & (results.scope == "paper")]
        lines += [f"#### `{claim.key}` does not reproduce", ""]
        if not _series(claim, ev).empty:
            if figures is not None:
                curve(claim, ev, os.path.join(figures, f"{claim.key}.png"))
            lines += [f"![{claim.key}: {claim.evidence} per iteration]({link}/{claim.key}.png)", ""]
        for r in rows.itertuples(index=False):
            lines.append(f"- {r.task} {r.label} ({r.agents} agents, {r.run}): {r.verdict}; {turn(claim, r)}; "
                         f"{model_pair(claim, ev, r)}.")
        lines.append("")
    return (["### Where a finding does not reproduce", ""] + lines) if lines else []


__all__ = ["curve", "model_pair", "section", "turn"]
