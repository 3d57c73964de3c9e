"""Run every figure and table target at a scale, alone and in order, on this host: its time (training, compiling
and drawing included) and, at the smoke scale, its figure, for the documentation's target pages.

    python tools/target_smoke.py [--scale smoke|mid] [--out results/docs-SCALE] [--targets NAME ...]
                                                                         (make target-smoke, make target-mid)

Writes docs/targets/SCALE.json (seconds per target, the host's cores and the date) and, at smoke,
docs/targets/img/NAME.png (the figure, reduced for the page); `python tools/gen_docs.py` then renders them into
the pages. Targets that share
a study train it once, in the first of them: each later one's time is its own work on the saved runs, as a user
running the targets in this order would see it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
IMG = os.path.join(ROOT, "docs", "targets", "img")


def shrink(src: str, dst: str, width: int = 900) -> None:
    """A copy of the figure at most ``width`` pixels wide (the committed images stay small), its resolution
    scaled with it so that the file still states the figure's size in inches (what the docs test reads)."""
    from PIL import Image

    with Image.open(src) as im:
        dpi = im.info.get("dpi", (110, 110))[0]
        if im.width > width:
            dpi *= width / im.width
            im = im.resize((width, round(im.height * width / im.width)), Image.LANCZOS)
        # a 256-colour palette: a third the bytes
        im.convert("RGB").quantize(colors=256).save(dst, optimize=True, dpi=(dpi, dpi))


def main(argv=None) -> int:
    from pgdiag.experiments import targets

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", default="smoke", choices=["smoke", "mid"])
    parser.add_argument("--out", default=None, help="where the studies go (default results/docs-SCALE)")
    parser.add_argument("--targets", nargs="+", default=None)
    args = parser.parse_args(argv)
    names = args.targets or [n for n, t in targets.TARGETS.items() if t.kind in ("training", "diagnostic", "optimize")]
    out_dir = args.out or os.path.join(ROOT, "results", f"docs-{args.scale}")
    record_path = os.path.join(ROOT, "docs", "targets", f"{args.scale}.json")
    os.makedirs(IMG, exist_ok=True)
    record = json.load(open(record_path)) if os.path.exists(record_path) else {"targets": {}}
    for name in names:
        t = targets.get(name)
        start = time.perf_counter()
        out = t.train(args.scale, out=os.path.join(out_dir, t.study), progress=False)
        seconds = time.perf_counter() - start
        entry = {"seconds": round(seconds, 1)}
        if out.get("figure") and args.scale == "smoke":
            shrink(out["figure"], os.path.join(IMG, f"{name}.png"))
            entry["figure"] = f"img/{name}.png"
        record["targets"][name] = entry
        record.update(cores=os.cpu_count(), date=time.strftime("%Y-%m-%d"),
                      host=f"{os.cpu_count()}-core CPU, no accelerator")
        with open(record_path, "w") as f:
            json.dump(record, f, indent=1, sort_keys=True)
        print(f"{name}: {seconds:.0f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
