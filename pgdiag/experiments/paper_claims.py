"""The claims of both papers as data: each quotes the paper's sentence, names the evidence series it is tested on,
states its rule, threshold and why, and declares where the paper made it
([`Scope`][pgdiag.experiments.paper_claims.Scope]: the figure's tasks, the point of training, the sample sizes).
How a claim is tested is [`claims`][pgdiag.experiments.claims]; the statements themselves are
[`claims_cl`][pgdiag.experiments.claims_cl] (A Closer Look) and [`claims_im`][pgdiag.experiments.claims_im]
(Implementation Matters)."""

from __future__ import annotations

import dataclasses

#: how a claim is tested ([`claims`][pgdiag.experiments.claims]): the median agent ("agents"); two groups by θ, the
#: median of A − B over their agents ("groups"), or by the difference of their mean agents ("means": IM's tables
#: report means); the smallest of several such differences ("min-difference", "min-mean-difference"); or a
#: deterministic check of a theorem ("exact")
KINDS = ("agents", "groups", "min-difference", "means", "min-mean-difference", "exact")
#: what a claim is on the page: a *finding* of the paper (counted, multiplicity-controlled), an *extension* (a
#: sounder estimand beside the paper's, never counted), a *check* (an identity or a demonstration: shown, not
#: a finding)
ROLES = ("finding", "extension", "check")
#: the points of training a claim reads ([`claims.in_window`][pgdiag.experiments.claims.in_window]), as a fraction
#: of the run (progress) and the annealed learning rate's share of its start (lr_share)
WINDOWS = {
    "initial": "the initial policy (iteration 0)",
    "after-first": "the checkpoints after the initial policy",
    "later": "later in training, as CL's iteration 300 of 488: 45–75% through the run, the learning rate still "
             "≥ 0.25 of its start",
    "stepping": "the checkpoints or iterations after the first where an annealed learning rate is still ≥ 0.25 of "
                "its start (a step annealed away is not the algorithm's step)",
    "whole": "the whole run (its statistic reads what it needs of it: a curve, or the final score)",
}


@dataclasses.dataclass(frozen=True)
class Scope:
    """Where the paper made a claim: measured elsewhere, a claim's rows are *exploratory* (shown, never a verdict)."""

    figure: str                  # the figure(s) the claim rests on
    tasks: tuple = ()            # their tasks (empty: any)
    window: str = "after-first"  # the point of training ([`WINDOWS`][pgdiag.experiments.paper_claims.WINDOWS])
    pairs: tuple = (0, float("inf"))   # the sample sizes the claim rests on (a row's ``pairs`` inside)
    sizes: str = ""              # those sample sizes in words (the advice names them)
    iterations: int = 0          # the paper's run length in iterations (0: any; a run within 5% of it is the paper's)
    model: str = ""              # the paper's MuJoCo models: "gym" (Gym's v2, as the papers had them); "": any

    def describe(self) -> str:
        tasks = "/".join(self.tasks) if self.tasks else "any task"
        run = (f", runs of {self.iterations} iterations" if self.iterations else "") + \
            (f" on {MODELS.get(self.model, self.model)} models" if self.model else "")
        return f"{self.figure}: {tasks}, {WINDOWS[self.window]}" + (f", {self.sizes}" if self.sizes else "") + run

    def at_papers_run(self, iterations: int, model: str) -> "Scope":
        """This scope with the paper's run length and models; the initial policy (iteration 0) is the same at any
        run length, so a scope there keeps any."""
        return dataclasses.replace(self, iterations=0 if self.window == "initial" else iterations, model=model)


#: the MuJoCo models a run can have, in words
MODELS = {"gym": "Gym's", "brax": "Brax's"}
#: how close a run's length must be to the paper's for its checkpoints to be the paper's points of training
RUN_LENGTH_TOLERANCE = 0.05


@dataclasses.dataclass(frozen=True)
class Level:
    """A stronger reading of a claim's own series (one finding, two levels): tested only where the claim holds."""

    name: str          # e.g. "virtually uncorrelated"
    test: str
    threshold: object
    reason: str
    tasks: tuple = ()  # where the paper states the stronger reading (empty: where the claim is read)

    def rule(self) -> str:
        return _rule(self.test, self.threshold)


@dataclasses.dataclass(frozen=True)
class Claim:
    key: str
    paper: str          # the reports it belongs to: "CL" or "IM"
    family: str         # the paper section whose findings share one multiplicity control (Holm)
    where: str          # section and figure
    quote: str          # the paper's own sentence
    evidence: str       # the evidence series tested
    statistic: str      # what one unit's value is
    test: str           # "<", ">" or "within"
    threshold: object   # a number, or (low, high) for "within"
    reason: str         # why this threshold
    scope: Scope
    kind: str = "agents"
    role: str = "finding"
    labels: tuple = ()  # the algorithms the claim is about (empty: every measured one)
    versus: str = ""    # groups: the second group's label, or "tasks": the hardest task against the easier ones
    differences: tuple = ()  # min-difference: the (a, b) pairs of labels
    stronger: tuple = ()     # [`Level`][pgdiag.experiments.paper_claims.Level] s read on the same series
    within: str = "mean"     # how one agent's measurements (checkpoints, iterations) become its value
    floor: str = ""          # the paired excess over the noise floor a band needs (the network's error minus a perfect
    #                          value function's on the same states; a band not shown above the floor is no finding)
    note: str = ""           # what the page says beside the rule (e.g. a paper that disagrees)
    holds_on: str = "all"    # "all" of its tests (the intersection–union test), or "most" ("often": a majority)
    undefined: str = ""      # where its statistic has no value (said when a test has no agent with one)

    def rule(self) -> str:
        return _rule(self.test, self.threshold) + (" on most of its tests (a majority of its tasks and "
                                                   "algorithms)" if self.holds_on == "most" else "") \
            + (", and above the noise floor (the error minus a perfect value function's on the same states, "
               "> 0)" if self.floor else "")

    @property
    def tasks(self) -> tuple:
        return self.scope.tasks


def _number(x) -> str:
    """A threshold as a reader takes it in: exact where short (0.25, 1.25, 1e-04), else to three figures with ≈
    (1/√2 as ≈0.707; the claim's reason gives where it comes from)."""
    exact = f"{x:g}"
    return exact if len(exact.lstrip("-")) <= 6 else f"≈{x:.3g}"


def _rule(test, threshold) -> str:
    if test == "within":
        return f"within [{_number(threshold[0])}, {_number(threshold[1])}]"
    return f"{test} {_number(threshold)}"


__all__ = ["Claim", "KINDS", "Level", "MODELS", "ROLES", "RUN_LENGTH_TOLERANCE", "Scope", "WINDOWS"]
