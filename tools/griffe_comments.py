"""A Griffe extension for the API reference (mkdocs.yml): attributes documented by comments get them as docstrings.

The package documents its constants with ``#:`` comment lines above them (Sphinx's convention) and the fields
of its settings and study dataclasses with a trailing comment, continued on comment-only lines below it whose
text is indented to line up::

    #: 2^24: the largest count a float32 mean update keeps exact.
    MAX_PAIRS = 2 ** 24

    estimates: int = 10            # K independent estimates at every N
    subjects: object   # DataFrame: KEYS, diverged, ...,
    #                    true_pairs, true_ratio (see _frames)

Griffe reads neither; an attribute without a docstring of its own gets the comment's text.
"""

from __future__ import annotations

import io
import tokenize

import griffe


def _comments(path: str) -> tuple:
    """({line: comment text} of the comments after code, {line: comment text} of comment-only lines)."""
    trailing, alone = {}, {}
    with open(path, encoding="utf-8") as f:
        source = f.read()
    lines = source.splitlines()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (tokenize.TokenError, SyntaxError):
        return trailing, alone
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            row, col = tok.start
            (alone if not lines[row - 1][:col].strip() else trailing)[row] = tok.string
    return trailing, alone


class CommentDocstrings(griffe.Extension):
    """``#:`` lines above an attribute, or its trailing comment and the comment lines continuing it."""

    def __init__(self) -> None:
        super().__init__()
        self._files: dict = {}

    def on_attribute_instance(self, *, node, attr, agent, **kwargs) -> None:
        if attr.docstring is not None or not attr.lineno or not attr.filepath or isinstance(attr.filepath, list):
            return
        path = str(attr.filepath)
        if path not in self._files:
            self._files[path] = _comments(path)
        trailing, alone = self._files[path]
        text, lineno = [], attr.lineno
        row = attr.lineno - 1
        while row in alone and alone[row].startswith("#:"):          # Sphinx's "#:" block above
            text.insert(0, alone[row][2:].strip())
            row -= 1
        if text:
            lineno = row + 1
        else:
            end = attr.endlineno or attr.lineno
            comment = next((trailing[r] for r in range(attr.lineno, end + 1) if r in trailing), None)
            if comment is None or comment.lstrip("#: ").startswith(("noqa", "type:", "pragma", "fmt:")):
                return
            text = [comment.lstrip("#:").strip()]
            row = end + 1
            while row in alone and alone[row].startswith("#  "):      # continuation lines, lined up
                text.append(alone[row][1:].strip())
                row += 1
        text = " ".join(t for t in text if t)
        if text:
            attr.docstring = griffe.Docstring(text, lineno=lineno, parent=attr)
