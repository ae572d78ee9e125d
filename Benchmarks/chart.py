#!/usr/bin/env python3
"""Draws the benchmark's scenarios as grouped bars: median wall time per tool, one group (panel)
per scenario, with min-max error bars, from the JSON that bench.py writes.

    Benchmarks/.venv/bin/python Benchmarks/chart.py Benchmarks/results/latest.json latest.png

Each scenario has its own panel and y axis because their times differ by two orders of magnitude
(loopback: under a second; a single stream through the cap: tens of seconds); a shared axis would
flatten the loopback bars to nothing. Within a panel, a tool more than OFF_SCALE times slower than
the fastest (curl's single stream behind a per-connection cap) would flatten the others the same
way: its bar is cut at the top of the axis, hatched, and labelled with its time. Lower is faster.
A tool that failed gets the word "failed" where its bar would be. Runs in Benchmarks/.venv (matplotlib from PyPI; scripts/bench.sh makes it).
"""

import json
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.transforms import blended_transform_factory  # noqa: E402

# One colour per command, the same in every panel; rangefetch's two rows in two blues.
COLOURS = {"curl": "#8c8c8c", "aria2c": "#e39b3b", "axel": "#6aa84f",
           "rangefetch -n 16": "#1f5fa8", "rangefetch -n auto": "#6fa8dc"}


# A median more than this many times the panel's fastest is drawn off scale.
OFF_SCALE = 5
# Panels per row: a scenario over plain HTTP, HTTPS/1.1 and h2.
COLUMNS = 3


def colour(row):
    return COLOURS.get(row["label"], COLOURS.get(row["tool"], "#999999"))


def main(source, target):
    with open(source) as handle:
        report = json.load(handle)
    scenarios = [s for s in report["sections"] if s.get("kind") == "scenario"]
    if not scenarios:
        print("chart: no scenario in the results; nothing to draw", file=sys.stderr)
        return 0
    # One row per scenario (plain HTTP, HTTPS/1.1, h2 side by side), at most COLUMNS panels a row.
    columns = min(COLUMNS, len(scenarios))
    grid_rows = -(-len(scenarios) // columns)
    figure, axes = plt.subplots(grid_rows, columns, figsize=(max(4.6 * columns, 7), 5 * grid_rows), squeeze=False)
    for axis in axes.flat[len(scenarios):]:
        axis.set_visible(False)
    for axis, section in zip(axes.flat, scenarios):
        rows = section["rows"]
        positions = range(len(rows))
        near_bottom = blended_transform_factory(axis.transData, axis.transAxes)  # x: bar, y: 0..1
        walls = [row["wall_s"] for row in rows if row["status"] == "ok"]
        fastest = min((wall["median"] for wall in walls), default=0)
        in_scale = [wall["max"] for wall in walls if wall["median"] <= OFF_SCALE * fastest]
        top = 1.2 * max(in_scale) if in_scale else None
        for position, row in zip(positions, rows):
            if row["status"] != "ok":
                axis.text(position, 0.03, "failed", transform=near_bottom, rotation=90, ha="center",
                          va="bottom", color="#b00020")
                continue
            wall = row["wall_s"]
            if top is not None and wall["median"] > OFF_SCALE * fastest:
                axis.bar(position, top, color=colour(row), width=0.75, hatch="//", edgecolor="white")
                axis.text(position, 0.97 * top, f"{wall['median']:.1f}\noff\nscale", ha="center", va="top",
                          fontsize=8, color="#222222",
                          bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.85, "pad": 1})
                continue
            axis.bar(position, wall["median"], color=colour(row), width=0.75,
                     yerr=[[wall["median"] - wall["min"]], [wall["max"] - wall["median"]]],
                     capsize=4, ecolor="#333333")
            axis.annotate(f"{wall['median']:.2f}", (position, wall["max"]), xytext=(0, 3),
                          textcoords="offset points", ha="center", va="bottom", fontsize=8)
        axis.set_xlim(-0.6, len(rows) - 0.4)  # keep room for a failed row, which has no bar
        axis.set_xticks(list(positions))
        axis.set_xticklabels([row["label"] for row in rows], rotation=35, ha="right", fontsize=8)
        size_mib = section["size_bytes"] / 2**20
        axis.set_title(f"{section.get('chart_title') or section['title']}\n{size_mib:.0f} MiB", fontsize=9)
        axis.set_ylabel("wall time, s (median; bars: min–max)")
        if top is not None:
            axis.set_ylim(0, top)
        else:
            axis.margins(y=0.15)
        axis.grid(axis="y", alpha=0.3)
    runs = report.get("runs")
    figure.suptitle(f"rangefetch benchmark {report.get('date', '')}: lower is faster\n{runs} alternating runs "
                    f"per command; only rangefetch fdatasyncs its output", fontsize=10)
    figure.tight_layout()
    figure.savefig(target, dpi=110)
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
