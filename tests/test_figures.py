"""What every figure shares (pgdiag.experiments.figures): one legend below the panels at a legible size, axes
that show the intervals whole, and the gradient grid's batch size in place of a near-duplicate."""

import numpy as np
import pytest

from pgdiag.diagnostics.streaming import with_batch
from pgdiag.experiments import figures


def test_one_legend_for_the_figure_each_label_once():
    plt = figures.pyplot()
    fig, axes = plt.subplots(2, 2, figsize=(10, 6))
    for ax in axes.flat:
        ax.plot([0, 1], [0, 1], label="ppo")
        ax.plot([0, 1], [1, 0], label="trpo")
        ax.axvline(0.5, label="the algorithm's batch size")
        ax.legend(fontsize=6)
    room = figures._figure_legend(fig)
    assert all(ax.get_legend() is None for ax in axes.flat) and len(fig.legends) == 1
    legend = fig.legends[0]
    assert [t.get_text() for t in legend.get_texts()] == ["ppo", "trpo", "the algorithm's batch size"]
    assert all(t.get_fontsize() == figures.LEGEND_SIZE >= 8 for t in legend.get_texts())
    assert 0 < room < 0.4
    plt.close(fig)


def test_the_axis_reaches_below_an_interval_that_goes_lower():
    assert figures.band_floor(np.array([-0.3, 0.2, np.nan]), -0.1) == pytest.approx(-0.35)
    assert figures.band_floor(np.array([0.1, 0.4]), -0.1) == -0.1
    assert figures.band_floor(np.array([]), -0.2) == -0.2


def test_the_batch_size_replaces_a_size_within_ten_percent():
    assert with_batch((100, 1000, 4642), 1024) == (100, 4642, 1024)
    assert with_batch((100, 215, 464, 1000, 2154, 4642), 2048) == (100, 215, 464, 1000, 4642, 2048)
    assert with_batch((100, 900), 1024) == (100, 900, 1024)   # 12% away: both kept


def test_panels_wrap_so_the_text_is_readable_in_the_documentation_column():
    """A row of five 4.2-inch panels laid side by side is 21 in wide: in the docs' ~700-px column its 9-point
    text would show at 9 × 700 / (21 × 72) ≈ 4 px. Wrapped at two panels a line the figure is 8.4 in wide and the
    same text ≈ 10.4 px (worked by hand); every row starts a line of its own and the empty slots are blank."""
    fig, axes = figures.panels(2, 5, 4.2, 3.0)
    assert axes.shape == (2, 5) and figures.MAX_COLUMNS == 2
    width, height = fig.get_size_inches()
    assert width == pytest.approx(8.4) and height == pytest.approx(2 * 3 * 3.0)   # 2 rows × 3 lines each
    assert 9 * 700 / (width * 72) >= 10
    # row 1 starts on its own line (the fourth of six), in the left column
    top = [ax.get_subplotspec().rowspan.start for ax in axes[1]]
    assert top == [3, 3, 4, 4, 5] and axes[1, 0].get_subplotspec().colspan.start == 0
    blank = [ax for ax in fig.axes if ax not in set(axes.flat)]
    assert len(blank) == 2 and not any(ax.axison for ax in blank)
    figures.pyplot().close(fig)
    fig, axes = figures.panels(1, 2, 5.0, 4.0)          # two panels stay side by side
    assert fig.get_size_inches()[0] == pytest.approx(10.0) and axes[0, 1].get_subplotspec().colspan.start == 1
    figures.pyplot().close(fig)
