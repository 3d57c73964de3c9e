"""V*, the baseline study's "true" value function (CL §5.2): its fit data (Monte-Carlo returns of the frozen
policy's states, each segment run on until its returns are complete), its fit in rounds, and the paired t-test on
held-out batches that decides whether it predicts the returns better than the agent's network
([`pgdiag.studies.baselines.measure`][pgdiag.studies.baselines.measure] explains why a squared-error test
is the right one). ``r`` and ``settings`` are the baseline study's
[`Resolved`][pgdiag.studies.baselines.measure.Resolved] and
[`BaselineSettings`][pgdiag.studies.baselines.measure.BaselineSettings]."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
from flax import struct

from pgdiag import networks, stages
from pgdiag.algorithms.epochs import value_update
from pgdiag.studies.baselines.paired_t import PairedT, paired_t
from pgdiag.diagnostics.sampling import start_carry
from pgdiag.objectives import mean_relative_error
from pgdiag.optim import adam
from pgdiag.rollout import UpdateBatch, discounted_returns, episode_completes


@struct.dataclass
class FitData:
    obs: jax.Array       # [C, B, obs]
    returns: jax.Array   # [C, B] discounted returns of the learner's rewards
    complete: jax.Array  # [C, B] the episode ends inside the segment
    exact: jax.Array | None = None   # [C, B] the exact V^π of each state (the linear-quadratic task), else None
    truncated: jax.Array | None = None  # [C, B] the returns cut at the end of the kept states (the batch end),
    #                                     as the original's value_loss_returns; None: not sampled
    nonterminal: jax.Array | None = None  # [C, B] not a done step (the states the original's value errors read)


def fit_data(env, r, agent, knobs, key, exact_value=None) -> FitData:
    """``fit_chunks`` batches of the algorithm's shape, each segment run on for the task's episode length (at most
    ``r.tail`` steps) so the returns of its states are complete; only the first ``steps`` states of a segment are
    kept (from reset, an environment idles once the episode at its last kept state has ended). ``r.fit_lanes``
    chains run side by side (each from its own start, continuing from chunk to chunk unless the algorithm resets),
    so the sequential length is a few segments, not fit_chunks. The last ``r.kept_out``
    batches (the t-test's, then the floor's) are held out, each an independent sample of the policy's batches: from
    reset, any chunk is; otherwise
    ([`Resolved.heldout_apart`][pgdiag.studies.baselines.measure.Resolved.heldout_apart])
    each is a stream of its own, started as every diagnostic stream is
    ([`start_carry`][pgdiag.diagnostics.sampling.start_carry]), one segment long. ``exact_value`` (raw state ->
    V^π, the linear-quadratic task): also the exact value of every kept state. Beside the complete returns, each
    kept state's return cut at the batch end (the first ``steps`` states of a segment are one batch of the
    algorithm's shape) and whether it is a done step."""
    steps, tail = r.own.steps, min(env.max_episode_steps, r.tail)
    lanes = r.fit_lanes
    env_major = lambda x: jnp.swapaxes(x[:steps], 0, 1).reshape((-1,) + x.shape[2:])  # noqa: E731

    def segment(carry, k):
        k_start, k_roll = jax.random.split(k)
        if r.own.start == "reset":
            carry = start_carry(env, r.own, agent, knobs, k_start)
        # from reset, the segment's end state is never read again: an environment idles once the episode running
        # at its last kept state has ended (the tail's later steps reach no kept state's return), and native
        # MuJoCo does not step it
        idle = None if r.own.start != "reset" else jnp.ones(carry.obs.shape[0], jnp.int32)
        data = stages.collect_batch(env, agent.policy, agent.value, carry, agent.filters, knobs, k_roll,
                                    steps + tail, frozen=True, keep_raw_obs=exact_value is not None,
                                    quota=idle, quota_from=steps - 1)
        tr = data.transitions
        cut = discounted_returns(tr.reward[:steps], tr.done[:steps], knobs["gamma"])
        out = FitData(obs=env_major(tr.obs), returns=env_major(discounted_returns(tr.reward, tr.done, knobs["gamma"])),
                      complete=env_major(episode_completes(tr.done)),
                      exact=None if exact_value is None else env_major(exact_value(tr.raw_obs[:steps])),
                      truncated=env_major(cut), nonterminal=env_major(~tr.done))
        return data.carry, out

    def body(carries, k):
        return jax.vmap(segment)(carries, jax.random.split(k, lanes))

    laid = r.fit_chunks - (r.kept_out if r.heldout_apart else 0)
    starts = jax.random.split(jax.random.fold_in(key, 1), lanes)
    carries = jax.vmap(lambda k: start_carry(env, r.own, agent, knobs, k))(starts)
    _, data = jax.lax.scan(body, carries, jax.random.split(key, laid // lanes))   # [S, lanes, B, ...]
    data = jax.tree.map(lambda x: x.reshape((laid,) + x.shape[2:]), data)
    if r.heldout_apart and r.kept_out:
        def own_stream(k):
            k_start, k_seg = jax.random.split(k)
            return segment(start_carry(env, r.own, agent, knobs, k_start), k_seg)[1]

        held = jax.vmap(own_stream)(jax.random.split(jax.random.fold_in(key, 2), r.kept_out))
        data = jax.tree.map(lambda a, b: jnp.concatenate([a, b]), data, held)
    return data


@struct.dataclass
class FitReport:
    """V*'s fit and its comparison with the agent's network on the held-out batches (all scalars; NaN where
    no fit was made, and the ``*exact*`` fields off the linear-quadratic task)."""
    fitted_mre: jax.Array    # held-out MRE of the fitted network against the returns
    agent_mre: jax.Array     # the agent's value network on the same states
    fitted_ev: jax.Array     # explained variance 1 − Var(R − V)/Var(R) of the fitted network
    agent_ev: jax.Array
    final_loss: jax.Array    # the fit's training loss, mean over its last epoch
    improvement: jax.Array   # agent_mre − fitted_mre, the mean over held-out segments of the paired difference
    improvement_se: jax.Array  # its standard error across the held-out segments (independent batches)
    fitted_mse: jax.Array    # held-out mean squared error of the fitted network against the returns
    agent_mse: jax.Array     # the agent's network on the same states
    mse_improvement: jax.Array     # agent − fitted MSE: the mean over held-out batches of the paired difference
    mse_improvement_se: jax.Array  # its standard error across the held-out batches
    fit_t: jax.Array         # the paired t statistic of mse_improvement (heldout_chunks − 1 degrees of freedom)
    fit_p: jax.Array         # its one-sided p-value (H1: the fitted network has the lower MSE), last round
    fitted_better: jax.Array  # bool: fit_p < fit_level / fit_rounds after some round (the fit stopped there)
    fit_rounds_used: jax.Array  # int: rounds of fit_epochs epochs run (the cap fit_rounds when never better)
    fit_epochs_used: jax.Array  # int: fit_rounds_used × fit_epochs
    heldout_chunks: jax.Array   # int: held-out batches the test is taken over
    fitted_mse_exact: jax.Array  # LQR: MSE of the fitted network against the exact V^π on the held-out states
    agent_mse_exact: jax.Array   # LQR: the agent's network
    exact_mse: jax.Array         # LQR: MSE of V^π against the returns: the noise floor no network can go below
    # The floor, on the floor_chunks held-out batches the stopping rule never looked at (the fields above are
    # read on the t-test's batches, which chose when the fit stopped): non-terminal states, against the complete
    # returns (states whose return is complete) and against the returns cut at the batch end (every one)
    floor_chunks: jax.Array          # int: the batches the floor is read on (0: none, every floor field NaN)
    floor_fitted_mre: jax.Array      # V*'s MRE against the complete returns: the floor
    floor_agent_mre: jax.Array       # the agent's network on the same states
    floor_fitted_mre_truncated: jax.Array  # V*'s MRE against the returns cut at the batch end
    floor_agent_mre_truncated: jax.Array   # the agent's network on the same states
    floor_fitted_mse: jax.Array      # V*'s MSE against the complete returns
    floor_agent_mse: jax.Array       # the agent's network's
    floor_exact_mre: jax.Array       # LQR: V^π's own MRE against the complete returns (the floor exactly)
    floor_exact_mre_truncated: jax.Array  # LQR: V^π's MRE against the returns cut at the batch end


def empty_report() -> FitReport:
    """The report of a study without V*."""
    nan, zero = jnp.float32(jnp.nan), jnp.int32(0)
    ints = {"fit_rounds_used", "fit_epochs_used", "heldout_chunks", "floor_chunks"}
    return FitReport(**{f.name: jnp.bool_(False) if f.name == "fitted_better" else zero if f.name in ints else nan
                        for f in dataclasses.fields(FitReport)})


def _explained_variance(v, target, mask):
    w = mask.astype(jnp.float32)
    n = jnp.maximum(jnp.sum(w), 1.0)
    mean = jnp.sum(w * target) / n
    var = jnp.sum(w * jnp.square(target - mean)) / n
    resid = target - v
    rmean = jnp.sum(w * resid) / n
    return 1.0 - jnp.sum(w * jnp.square(resid - rmean)) / n / jnp.maximum(var, 1e-30)


def _mse(v, target, mask, axis=None):
    """Mean of (v − target)² over ``mask`` (along ``axis``); NaN where nothing is selected."""
    n = jnp.sum(mask, axis=axis)
    sq = jnp.sum(jnp.where(mask, jnp.square(v - target), 0.0), axis=axis)
    return jnp.where(n > 0, sq / jnp.maximum(n, 1), jnp.nan)


def fit_value(static, settings, r, data: FitData, agent, knobs, key, start=None):
    """A value network fit to the complete returns of ``data`` (all but the kept-out chunks), starting from
    the agent's network (``fit_start="agent"``), a fresh one, or ``start`` (parameters) when given: rounds
    of ``fit_epochs`` passes of minibatch Adam on the squared error (algorithms.epochs.value_update with
    clipping off), the learning rate annealed linearly to 0 within each round and restarted at the next.

    After every round V* and the agent's network are scored on each held-out chunk (an independent batch
    of the algorithm's shape) by their mean squared error against the same Monte-Carlo returns, and a
    one-sided paired t-test of the per-chunk differences asks whether V* is closer to E[R | s] (CL §5.2:
    a "true" value function is one fit to the returns, so it must be shown to predict them better than the
    agent's network does). The fit stops at the first round the test says so at level fit_level /
    fit_rounds — Bonferroni over the rounds looked at, so "better" is a level-fit_level statement however
    many rounds ran — or after ``fit_rounds`` rounds. Under vmap a stopped subject's parameters stay as they
    are while the others go on (``lax.while_loop`` on a per-subject flag). Returns the parameters and a
    [`FitReport`][pgdiag.studies.baselines.value_fit.FitReport].

    The rule stops at a look its test chunks favour, so errors read on them are biased low for V*; the floor
    (``floor_*``) is read on the ``r.floor_chunks`` chunks after them, which no look reads."""
    train = r.fit_chunks - r.kept_out
    test_end = train + r.heldout_chunks
    flat = lambda x: x[:train].reshape((-1,) + x.shape[2:])  # noqa: E731
    n = (train * r.own.chunk) // settings.fit_minibatch * settings.fit_minibatch
    obs, ret, ok = (flat(x)[:n] for x in (data.obs, data.returns, data.complete))
    batch = UpdateBatch(obs=obs, action=None, old_log_prob=None, advantages=None, old_values=jnp.zeros_like(ret),
                        value_targets=ret, value_mask=ok)
    plain = {**knobs, "value_clipping": jnp.bool_(False)}
    k_init, k_fit = jax.random.split(key)
    params = start if start is not None else agent.value if settings.fit_start == "agent" else \
        networks.init_value(k_init, obs.shape[-1], static.value_hidden, knobs)
    opt = adam(knobs["adam_eps"]).init(params)
    E, cap = settings.fit_epochs, settings.fit_rounds
    look_level = settings.fit_level / cap
    # the held-out chunks [H, B]: per chunk, each network's mean squared error against the returns
    h_obs, h_ret, h_ok = data.obs[train:test_end], data.returns[train:test_end], data.complete[train:test_end]
    v_agent = networks.value_apply(agent.value, h_obs, knobs)
    agent_chunk_mse = _mse(v_agent, h_ret, h_ok, axis=1)

    def test(p):
        return paired_t(agent_chunk_mse - _mse(networks.value_apply(p, h_obs, knobs), h_ret, h_ok, axis=1))

    def fit_round(carry):
        p, s, rnd, _, _ = carry

        def epoch(c, e):
            lr = settings.fit_lr * (1.0 - e / E)
            p, s, losses = value_update(c[0], c[1], batch, lr, plain, jax.random.fold_in(k_fit, rnd * E + e), 1,
                                        n // settings.fit_minibatch)
            return (p, s), jnp.mean(losses)

        (p, s), losses = jax.lax.scan(epoch, (p, s), jnp.arange(E))
        return p, s, rnd + 1, test(p).p < look_level, losses[-1]

    carry = (params, opt, jnp.int32(0), jnp.bool_(False), jnp.float32(jnp.nan))
    params, _, rounds, better, final_loss = jax.lax.while_loop(lambda c: ~c[3] & (c[2] < cap), fit_round, carry)

    report = _fit_report(data, train, test_end, params, agent.value, v_agent, test(params), knobs,
                         final_loss=final_loss, better=better, rounds=rounds, epochs=E)
    return params, report


def _fit_report(data: FitData, train: int, test_end: int, params, agent_value, v_agent, tt: PairedT, knobs, *,
                final_loss, better, rounds, epochs) -> FitReport:
    """What [`fit_value`][pgdiag.studies.baselines.value_fit.fit_value] reports of the fitted network ``params``
    against the agent's on the held-out chunks ``data[train:test_end]`` (``v_agent``: the agent's values there;
    ``tt``: the last look's paired test), and the floor on the chunks after them."""
    v_fit = networks.value_apply(params, data.obs[train:test_end], knobs)
    flat_h = lambda x: x.reshape((-1,) + x.shape[2:])  # noqa: E731
    fv, av = flat_h(v_fit), flat_h(v_agent)
    hr, hk = flat_h(data.returns[train:test_end]), flat_h(data.complete[train:test_end])
    # per held-out chunk: the agent's MRE minus the fitted network's on the same states
    mre = jax.vmap(lambda a, f, t, ok: mean_relative_error(a, t, ok) - mean_relative_error(f, t, ok))(
        v_agent, v_fit, data.returns[train:test_end], data.complete[train:test_end])
    mre_t = paired_t(mre)
    nan = jnp.float32(jnp.nan)
    if data.exact is not None:
        h_exact = flat_h(data.exact[train:test_end])
        exact = (_mse(fv, h_exact, hk), _mse(av, h_exact, hk), _mse(h_exact, hr, hk))
    else:
        exact = (nan, nan, nan)
    report = FitReport(fitted_mre=mean_relative_error(fv, hr, hk), agent_mre=mean_relative_error(av, hr, hk),
                       fitted_ev=_explained_variance(fv, hr, hk), agent_ev=_explained_variance(av, hr, hk),
                       final_loss=final_loss, improvement=mre_t.mean, improvement_se=mre_t.se,
                       fitted_mse=_mse(fv, hr, hk), agent_mse=_mse(av, hr, hk), mse_improvement=tt.mean,
                       mse_improvement_se=tt.se, fit_t=tt.t, fit_p=tt.p, fitted_better=better,
                       fit_rounds_used=rounds, fit_epochs_used=rounds * epochs, heldout_chunks=tt.n.astype(jnp.int32),
                       fitted_mse_exact=exact[0], agent_mse_exact=exact[1], exact_mse=exact[2],
                       **_floor(data, test_end, params, agent_value, knobs))
    return report


def _floor(data: FitData, start: int, fitted, agent_value, knobs) -> dict:
    """The floor fields of [`FitReport`][pgdiag.studies.baselines.value_fit.FitReport] on the chunks ``data[start:]``
    (the floor's, which the stopping rule never read), all states of those chunks pooled: non-terminal states,
    against the complete returns where they are complete and against the returns cut at the batch end on every
    one."""
    nan = jnp.float32(jnp.nan)
    chunks = data.returns.shape[0] - start
    fields = ("fitted_mre", "agent_mre", "fitted_mre_truncated", "agent_mre_truncated", "fitted_mse", "agent_mse",
              "exact_mre", "exact_mre_truncated")
    out = {f"floor_{f}": nan for f in fields}
    out["floor_chunks"] = jnp.int32(chunks)
    if chunks <= 0:
        return out
    flat = lambda x: x[start:].reshape((-1,) + x.shape[2:])  # noqa: E731
    obs, ret = flat(data.obs), flat(data.returns)
    nonterminal = flat(data.nonterminal) if data.nonterminal is not None else jnp.ones(ret.shape, bool)
    sel = nonterminal & flat(data.complete)
    v_fit, v_agent = (networks.value_apply(p, obs, knobs) for p in (fitted, agent_value))
    out.update(floor_fitted_mre=mean_relative_error(v_fit, ret, sel),
               floor_agent_mre=mean_relative_error(v_agent, ret, sel),
               floor_fitted_mse=_mse(v_fit, ret, sel), floor_agent_mse=_mse(v_agent, ret, sel))
    if data.truncated is not None:
        cut = flat(data.truncated)
        out.update(floor_fitted_mre_truncated=mean_relative_error(v_fit, cut, nonterminal),
                   floor_agent_mre_truncated=mean_relative_error(v_agent, cut, nonterminal))
    if data.exact is not None:
        exact = flat(data.exact)
        out["floor_exact_mre"] = mean_relative_error(exact, ret, sel)
        if data.truncated is not None:
            out["floor_exact_mre_truncated"] = mean_relative_error(exact, flat(data.truncated), nonterminal)
    return out


__all__ = ["FitData", "FitReport", "empty_report", "fit_data", "fit_value"]
