"""The notebooks' "Open in Colab" links and install source, from the repository's own address.

``make colab-links`` (``python tools/colab_links.py``) reads the repository's GitHub address from
``git remote get-url origin`` (or ``REPOSITORY=OWNER/NAME``, or ``$PGDIAG_REPOSITORY``) and writes it into
every notebook: a badge in the first cell, linking to the notebook on Colab, and the install cell's
``REPOSITORY`` default, so that the notebook's first cell installs pgdiag on a fresh Colab runtime with
nothing typed. A repository without a GitHub remote keeps the notebooks as they are and says how to name it.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys

BADGE = "https://colab.research.google.com/assets/colab-badge.svg"
MARK = "<!-- colab -->"      # the badge's line, recognised when the links are written again
_GITHUB = re.compile(r"github\.com[:/](?P<repo>[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+?)(?:\.git)?/?$")
_SLUG = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


class NoRepository(ValueError):
    pass


def repository(remote: str | None = None, cwd: str | None = None) -> str:
    """OWNER/NAME of the repository on GitHub: ``remote`` (an address or OWNER/NAME), else
    ``$PGDIAG_REPOSITORY``, else the ``origin`` remote of the git checkout at ``cwd``."""
    given = remote or os.environ.get("PGDIAG_REPOSITORY")
    if not given:
        try:
            done = subprocess.run(["git", "-C", cwd or ".", "remote", "get-url", "origin"], capture_output=True,
                                  text=True, timeout=10)
            given = done.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            given = ""
    if not given:
        raise NoRepository("this checkout has no 'origin' remote: name the repository with REPOSITORY=OWNER/NAME "
                           "(make colab-links) or $PGDIAG_REPOSITORY")
    if _SLUG.match(given):
        return given
    match = _GITHUB.search(given)
    if not match:
        raise NoRepository(f"{given!r} is not a GitHub address (Colab opens notebooks from GitHub): name the "
                           f"repository with REPOSITORY=OWNER/NAME")
    return match["repo"]


def colab_url(repo: str, notebook: str, branch: str = "main") -> str:
    """The address that opens ``notebook`` (a path in the repository) of ``repo`` on Colab."""
    return f"https://colab.research.google.com/github/{repo}/blob/{branch}/{notebook}"


def stamp(nb: dict, repo: str, path: str, branch: str = "main") -> dict:
    """``nb`` (a notebook's JSON) with the badge of ``path`` in its first cell and ``repo`` as its install
    cell's ``REPOSITORY`` default."""
    badge = f"[![Open In Colab]({BADGE})]({colab_url(repo, path, branch)}) {MARK}\n"
    first = nb["cells"][0]
    source = list(first["source"])
    if source and MARK in source[0]:           # written before: replaced, not repeated
        source = source[2:] if source[1:2] == ["\n"] else source[1:]
    first["source"] = [badge, "\n", *source]
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            text = "".join(cell["source"])
            if re.search(r'^REPOSITORY = "[^"]*"', text, re.M):
                text = re.sub(r'^REPOSITORY = "[^"]*"', f'REPOSITORY = "{repo}"', text, count=1, flags=re.M)
                cell["source"] = text.splitlines(keepends=True)
                break
    return nb


def write_links(repo: str, root: str = ".", branch: str = "main") -> list[str]:
    """Stamp every notebook under ``root/notebooks``; returns their paths."""
    paths = sorted(glob.glob(os.path.join(root, "notebooks", "*.ipynb")))
    for path in paths:
        with open(path) as f:
            nb = json.load(f)
        stamp(nb, repo, os.path.relpath(path, root), branch)
        with open(path, "w") as f:
            json.dump(nb, f, indent=1, ensure_ascii=False)
            f.write("\n")
    return paths


def main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python tools/colab_links.py", description=__doc__.split("\n")[0])
    parser.add_argument("--repository", default=None, help="OWNER/NAME or a GitHub address (default: git's origin)")
    parser.add_argument("--branch", default="main")
    args = parser.parse_args(argv)
    try:
        repo = repository(args.repository)
    except NoRepository as err:
        print(f"colab-links: {err}", file=sys.stderr)
        return 2
    for path in write_links(repo, branch=args.branch):
        print(f"{path}: {colab_url(repo, path, args.branch)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
