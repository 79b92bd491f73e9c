"""The one HTML document layout (``templates/page.html``) of every page served whole: the
dashboard's and the built-in identity provider's. Each page gives its title, what goes in
``<head>`` beside the shared meta tags, and its body."""

from __future__ import annotations

import functools
import string
from importlib import resources


@functools.cache
def template_text(name: str) -> str:
    """A file of ``adapters/webkit/templates`` (read once)."""
    source = resources.files("strongroom.adapters.webkit").joinpath(f"templates/{name}")
    return source.read_text(encoding="utf-8")


def document(title: str, head: str, body: str) -> str:
    """A whole HTML document around ``body``; the values are inserted as they are."""
    layout = string.Template(template_text("page.html"))
    return layout.substitute(title=title, head=head, body=body.rstrip("\n"))
