"""The one-sided paired t-test, traced: V*'s fit ([`value_fit`][pgdiag.studies.baselines.value_fit]) stops when it
shows the fitted network's per-batch squared errors below the agent's network's on held-out batches."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct


@struct.dataclass
class PairedT:
    mean: jax.Array   # mean of the differences
    se: jax.Array     # its standard error, sd / √n (sd with n − 1)
    t: jax.Array      # mean / se
    n: jax.Array      # differences counted (the finite ones)
    p: jax.Array      # one-sided p-value of H1: the true mean > 0 (Student's t, n − 1 degrees of freedom)


def student_t_sf(t, df):
    """P(T > t) for Student's t with ``df`` degrees of freedom (traced; any df > 0), through the regularized
    incomplete beta function: P(|T| > |t|) = I_{df/(df+t²)}(df/2, 1/2)."""
    tail = 0.5 * jax.scipy.special.betainc(df / 2.0, 0.5, df / (df + jnp.square(t)))
    return jnp.where(t >= 0, tail, 1.0 - tail)


def paired_t(diff, valid=None) -> PairedT:
    """The one-sided paired t-test of ``diff`` (per-batch differences; those not ``valid`` or not finite are
    left out): NaN p-value with fewer than two differences; ±∞ t when the differences are all equal and
    non-zero."""
    ok = jnp.isfinite(diff) if valid is None else valid & jnp.isfinite(diff)
    n = jnp.sum(ok)
    d = jnp.where(ok, diff, 0.0)
    mean = jnp.sum(d) / jnp.maximum(n, 1)
    var = jnp.sum(jnp.where(ok, jnp.square(d - mean), 0.0)) / jnp.maximum(n - 1, 1)
    se = jnp.sqrt(var / jnp.maximum(n, 1))
    t = jnp.where(se > 0, mean / jnp.where(se > 0, se, 1.0), jnp.sign(mean) * jnp.inf)
    t = jnp.where(mean == 0, jnp.where(se > 0, t, jnp.nan), t)
    p = jnp.where(n >= 2, student_t_sf(t, jnp.maximum(n - 1, 1).astype(jnp.float32)), jnp.nan)
    return PairedT(mean=mean, se=jnp.where(n >= 2, se, jnp.nan), t=jnp.where(n >= 2, t, jnp.nan), n=n, p=p)


__all__ = ["PairedT", "paired_t", "student_t_sf"]
