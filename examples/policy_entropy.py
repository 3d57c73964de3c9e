"""A measurement of your own, whole in one file: each agent's policy entropy, estimated from its own draws.

At every checkpointed agent the program draws `draws` actions at each state its environments stood in and averages
−log π(a|s): a Monte-Carlo estimate of the entropy, whose closed form for a Gaussian policy is
Σ_i log σ_i + (d/2)·log(2πe). Its standard error is known too: −log π(a|s) is a constant plus ½‖ε‖², ε ~ N(0, I_d),
and Var(½‖ε‖²) = d/2.

    from pgdiag.diagnostics import run
    study = run(ENTROPY, ["runs/lqr"], draws=256)
    study.entropy      # per agent and checkpoint: the estimate, its standard deviation per draw, the closed form
"""

import dataclasses

import jax
import pandas as pd

from pgdiag import FrozenPolicy
from pgdiag.diagnostics import Diagnostic, DiagnosticError, Work, over_subjects


@dataclasses.dataclass(frozen=True)
class EntropySettings:
    draws: int = 128     # actions drawn at each state
    seed: int = 0        # seeds every subject's draws

    def check(self) -> None:
        if self.draws < 2:
            raise DiagnosticError(f"draws must be at least 2 (a spread needs two), got {self.draws!r}")


class PolicyEntropy(Diagnostic):
    kind, settings, tables = "policy-entropy", EntropySettings, ("entropy",)

    def work(self, group) -> Work:
        """Per subject: draws × its environments' states, each draw an action and its log-probability."""
        states, (obs, act, _) = group.static.num_envs, group.sizes
        draws = group.settings.draws
        return Work(pairs=draws * states, steps=1, envs=states, words=draws * states * (2 * act + 1) + states * obs)

    def program(self, shape):
        draws = shape.resolved.draws

        def subject(state, knobs, key):
            pi = FrozenPolicy(params=state.policy, obs_stat=state.filters.obs, knobs=knobs, iteration=state.iteration)
            obs = state.envs.state.obs                                                 # [E, obs]: raw observations
            u = jax.vmap(lambda k: pi.draw(k, obs))(jax.random.split(key, draws))     # [D, E, act]
            nll = -jax.vmap(lambda x: pi.log_prob(obs, x))(u)                          # [D, E]
            return {"estimate": nll.mean(), "sd": nll.std(), "exact": pi.entropy(obs).mean(), "n": nll.size}

        return over_subjects(subject, shape.batching)

    def frames(self, measured) -> dict:
        out = {k: v.tolist() for k, v in measured.outputs.items()}
        return {"entropy": pd.DataFrame([{**row, **{k: v[s] for k, v in out.items()}}
                                         for s, row in enumerate(measured.subjects.rows)])}


ENTROPY = PolicyEntropy()
