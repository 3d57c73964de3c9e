"""MkDocs hooks for the site (mkdocs.yml: ``hooks``).

The docstrings cross-reference the package's objects by where they are defined (``[`run`][pgdiag.diagnostics
.engine.run]``, written by tools/docstring_roles.py), also objects the API reference does not render (internal
modules, private helpers). Such a reference is made optional here, before mkdocs-autorefs resolves them: a link
where the site renders its target, plain code (with the path as its tooltip) where it does not, instead of a
strict build's "Could not find cross-reference target". tools/docstring_roles.py --check keeps every one of
these paths naming an object the package defines.
"""

import re

PACKAGE = "pgdiag"
AUTOREF = re.compile(r"<autoref (?P<attrs>[^>]*)>")
IDENTIFIER = re.compile(r'\bidentifier="' + PACKAGE + r'(?:\.\w+)*"')


def optional_refs(html: str) -> str:
    """Every autoref to an identifier in the package marked ``optional``."""
    def mark(match):
        attrs = match["attrs"]
        if not IDENTIFIER.search(attrs) or re.search(r"(^|\s)optional(\s|=|$)", attrs):
            return match.group(0)
        return f"<autoref optional {attrs}>"
    return AUTOREF.sub(mark, html)


def on_page_content(html, page, config, files):
    return optional_refs(html)
