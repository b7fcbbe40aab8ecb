"""One display name per model of a run: short, unique within the run, used in every output.

A ``--model`` value can be long (``openai:llama3@http://10.0.0.5:8000/v1``, a path to a GGUF
file); tables, the report and the exports name each model by its display name instead, and the
manifest maps each display name back to the full value (``models[].name`` and ``models[].model``).

The store, the sample seeds and the statistics stay keyed by the full value: renaming happens on
finished tables (:func:`nlgbias.metrics.results.named_results`), so a name that changes (another
model added to the run makes two names collide) never changes a number.
"""

from __future__ import annotations

from collections import Counter
from pathlib import PurePath
from typing import Sequence
from urllib.parse import urlsplit


def _short(spec: str) -> str:
    """``openai:NAME@URL`` -> NAME; a path -> its file stem or folder name; ``org/name`` -> name."""
    if spec.startswith("openai:"):
        return spec[len("openai:"):].partition("@")[0]
    if spec == "fake" or spec.startswith("fake:"):
        return spec
    if spec.startswith("hf:"):
        spec = spec[3:]
    path = PurePath(spec.rstrip("/"))
    name = path.stem if path.suffix == ".gguf" else path.name
    return name or spec


def _longer(spec: str) -> str:
    """A longer name for one that collides: ``NAME@host:port`` for a server, ``parent/name`` for a path or hub id."""
    if spec.startswith("openai:"):
        name, _, url = spec[len("openai:"):].partition("@")
        return f"{name}@{urlsplit(url).netloc}" if url else spec
    if spec.startswith("fake"):
        return spec
    parts = PurePath(spec[3:] if spec.startswith("hf:") else spec.rstrip("/")).parts
    short = _short(spec)
    return "/".join([*parts[-2:-1], short]) if len(parts) > 1 else spec


def model_names(specs: Sequence[str]) -> dict[str, str]:
    """``{--model value: display name}`` for the models of one run.

    Names are the short form; where two collide, both take the longer form (server host and
    port, or the parent folder), and where those collide too, the full value.

    Examples
    --------
    >>> model_names(["smollm2-135m", "openai:fake-1@http://127.0.0.1:8000/v1", "./models/tiny"])
    {'smollm2-135m': 'smollm2-135m', 'openai:fake-1@http://127.0.0.1:8000/v1': 'fake-1', './models/tiny': 'tiny'}
    >>> model_names(["openai:m@http://a:1/v1", "openai:m@http://b:2/v1", "x/m.gguf"])
    {'openai:m@http://a:1/v1': 'm@a:1', 'openai:m@http://b:2/v1': 'm@b:2', 'x/m.gguf': 'x/m'}
    """
    names = {spec: _short(spec) for spec in specs}
    for step in (_longer, str):
        counts = Counter(names.values())
        names = {spec: step(spec) if counts[name] > 1 else name for spec, name in names.items()}
    if len(set(names.values())) < len(names):  # a short name equals another model's longer one
        names = {spec: spec for spec in specs}
    return names
