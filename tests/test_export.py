"""What a researcher opens besides the run directory: TensorBoard event files and a metric plot with a
band over seeds."""

import struct

import numpy as np
import pytest

from pgdiag import preset, sweep
from pgdiag.cli import main
from pgdiag.experiments import run_plot
from pgdiag.run import tensorboard


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    cfg = preset("ppo", "point_mass", num_envs=2, steps_per_env=32, num_iterations=3, num_minibatches=4,
                 ppo_epochs=1, value_epochs=1)
    return sweep(cfg, {"lr_policy": [1e-4, 1e-3]}, seeds=3, out=str(tmp_path_factory.mktemp("run")))


@pytest.mark.parametrize("data,crc", [(b"", 0x0), (b"123456789", 0xE3069283), (bytes(32), 0x8A9136AA),
                                      (b"\xff" * 32, 0x62A8AB43), (bytes(range(32)), 0x46DD794E)])
def test_crc32c_matches_published_check_values(data, crc):
    """RFC 3720 appendix B.4 and the CRC catalogue's check value for "123456789"."""
    assert tensorboard.crc32c(data) == crc


# -- an independent reader of the two wire formats ------------------------------------------------

def _records(blob: bytes):
    i = 0
    while i < len(blob):
        (n,) = struct.unpack_from("<Q", blob, i)
        (len_crc,) = struct.unpack_from("<I", blob, i + 8)
        payload = blob[i + 12:i + 12 + n]
        (crc,) = struct.unpack_from("<I", blob, i + 12 + n)
        assert len_crc == tensorboard._masked(blob[i:i + 8]) and crc == tensorboard._masked(payload)
        yield payload
        i += 12 + n + 4


def _fields(msg: bytes):
    i, out = 0, {}
    while i < len(msg):
        key, shift = 0, 0
        while True:
            b = msg[i]; i += 1; key |= (b & 0x7F) << shift; shift += 7
            if not b & 0x80:
                break
        number, wire = key >> 3, key & 7
        if wire == 0:
            v, shift = 0, 0
            while True:
                b = msg[i]; i += 1; v |= (b & 0x7F) << shift; shift += 7
                if not b & 0x80:
                    break
        elif wire == 1:
            v = struct.unpack_from("<d", msg, i)[0]; i += 8
        elif wire == 5:
            v = struct.unpack_from("<f", msg, i)[0]; i += 4
        else:
            n = msg[i]; i += 1   # lengths here stay below 128
            v = msg[i:i + n]; i += n
        out.setdefault(number, []).append(v)
    return out


def test_event_files_hold_every_agents_metrics(run, tmp_path):
    paths = tensorboard.export(run.path, str(tmp_path / "tb"))
    assert len(paths) == 6
    first = [p for p in paths if "agent000" in p][0]
    assert "lr_policy=0.0001" in first and "seed0" in first
    events = [_fields(r) for r in _records(open(first, "rb").read())]
    assert events[0][3] == [b"brain.Event:2"]
    scalars = {}
    for e in events[1:]:
        value = _fields(_fields(e[5][0])[1][0])
        scalars[(value[1][0].decode(), e[2][0])] = value[2][0]
    m = run.metrics[run.metrics.agent == 0]
    for name in ("value_loss", "policy_loss", "mean_return"):
        for it in range(3):
            v = float(m[name].iloc[it])
            if np.isfinite(v):
                assert scalars[(name, it)] == pytest.approx(v, rel=1e-6)
            else:
                assert (name, it) not in scalars
    assert sum(k[0] == "value_loss" for k in scalars) == 3
    assert not any(k[0] == "heldout_max_kl" for k in scalars)   # not measured: NaN is left out


def test_plot_draws_the_mean_over_seeds_with_its_band(run, tmp_path, capsys):
    cur = run_plot.curves(run, "value_loss")
    assert len(cur) == 2 * 3 and (cur.seeds == 3).all()
    part = run.metrics[(run.metrics.point == 1) & (run.metrics.iteration == 2)].value_loss
    # Student-t over the 3 seeds, by hand: mean ± t_{0.975, 2} · s / √3 (t_{0.975, 2} = 4.302653)
    half = 4.302653 * np.std(part.to_numpy(), ddof=1) / np.sqrt(3)
    row = cur[(cur.point == 1) & (cur.iteration == 2)].iloc[0]
    assert row["mean"] == pytest.approx(np.mean(part))
    assert (row.low, row.high) == pytest.approx((np.mean(part) - half, np.mean(part) + half), rel=1e-6)
    assert main(["plot", run.path, "--metric", "value_loss", "--out", str(tmp_path / "v.png")]) == 0
    assert (tmp_path / "v.png").stat().st_size > 0
    assert main(["plot", run.path, "--metric", "nope"]) == 2
    assert "unknown metric 'nope'" in capsys.readouterr().err
    assert main(["plot", run.path, "--metric", "value_mre_exact"]) == 2
    assert "not measured" in capsys.readouterr().err
