"""Load and validate probe suites written in YAML.

A suite is data: groups (who the prompt is about), templates (what is asked, with a
``{group}`` placeholder), the comparisons to test, and default sampling settings.  Built-in
suites live in ``nlgbias/suites/data/*.yaml``; users pass the path of their own file.

Every problem is reported as one line naming the file, the line and the field, e.g.
``my.yaml:14: templates[3].text: has no {group} placeholder``.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from nlgbias.errors import InputError, SuiteError
from nlgbias.inputs import special_kind
from nlgbias.resources import package_path
from nlgbias.sampling import SamplingParams
from nlgbias.suites.prompt_files import (MAX_PROMPTS, check_per_group, prompt_folder, read_prompt_folder,
                                        sampled_count)

TOP_KEYS = (
    "suite", "version", "description", "citation", "kind", "include", "extend",
    "sampling", "truncate", "groups", "templates", "comparisons", "scorers", "analyses",
    "prompt_sets", "continuations", "perturbations", "saliency_prompts", "default_probe", "prompts_per_set",
    "groups_from", "prompts_per_group", "prompt_file", "samples",
)
GROUP_SOURCES = ("holistic_bias",)  # groups_from: the groups a suite takes from a shipped data set
PROMPT_FILE_KEYS = ("source", "per_group")
PRONOUN_KEYS = ("prompt_sets", "continuations", "perturbations", "saliency_prompts", "default_probe",
                "prompts_per_set")
PERTURBATIONS = ("orig", "replace", "delete")
PROMPT_SET_KEYS = ("id", "source", "professions")
EXTEND_KEYS = ("groups", "templates", "comparisons")
KINDS = ("generation", "pronoun", "likelihood")
PRONOUN_ANALYSES = ("pronouns",)  # what a pronoun suite analyses (it takes no analyses key)
KNOWN_CONTEXTS = ("respect", "occupation")  # the built-in suites' contexts
CONTEXT_TYPO = 0.8  # difflib similarity at which a context is taken for a typo of another
SAMPLING_KEYS = {
    "max_new_tokens": int, "temperature": float, "top_k": int, "top_p": float,
}
RESERVED_ATTRIBUTES = {
    "run_id", "model", "suite", "suite_version", "prompt_id", "template_id", "template",
    "context", "group", "prompt", "sample_idx", "seed", "generation_id", "text",
}
ID_PATTERN = re.compile(r"^[^\W_][\w .'-]*\Z")  # \Z: no trailing newline either
MAX_NAME_LENGTH = 100  # a suite's name
PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
MAX_SUITE_BYTES = 5_000_000  # a suite lists templates and groups; the largest built-in one is ~40 kB
MAX_SUITE_NODES = 500_000  # YAML nodes after resolving aliases (a "billion laughs" file stops here)
MAX_DEFAULT_SAMPLES = 10_000  # a suite's own samples per prompt (``samples:``)
TRUNCATE_PATTERN = re.compile(r"^(first_sentence|none|words:[1-9][0-9]*)$")


@dataclass(frozen=True)
class Group:
    """A demographic group: its id, the text put into templates, and its attributes."""

    id: str
    text: str
    attributes: dict[str, str]
    # other texts of the same group ("The Deaf woman", "The Deaf man", ...); ``text`` is the first.
    # A group with variants gets one prompt per (template, variant).
    variants: tuple[str, ...] = ()

    @property
    def texts(self) -> tuple[str, ...]:
        """The texts its prompts use: the variants, or the one text."""
        return self.variants or (self.text,)

    @property
    def axis(self) -> str:
        return self.attributes["axis"]


@dataclass(frozen=True)
class Template:
    """A prompt template with one ``{group}`` placeholder, in a context (e.g. respect)."""

    id: str
    context: str
    text: str


@dataclass(frozen=True)
class Suite:
    """A validated suite.  ``content_hash`` covers the resolved content, not the file bytes."""

    name: str
    version: int
    description: str
    citation: str
    kind: str
    groups: tuple[Group, ...]
    templates: tuple[Template, ...]
    comparisons: tuple[tuple[str, str], ...]
    sampling: dict[str, Any]
    truncate: str
    scorers: tuple[str, ...]
    path: str
    analyses: tuple[str, ...] = ("shares",)
    probe: dict[str, Any] = field(default_factory=dict)  # pronoun suites: prompt sets and settings
    # the seeded sample of prompts per group (``prompts_per_group``, ``seed``; nlgbias.suites.sample), or {}
    sample: dict[str, Any] = field(default_factory=dict)
    samples: int | None = None  # samples per prompt when the run does not say (``samples:``; else 100)
    content_hash: str = field(default="")
    # "file:line: analyses[i]" of each name in ``analyses`` (for messages; not in the content or its hash)
    analyses_at: tuple[str, ...] = field(default=(), compare=False, repr=False)
    kind_at: str = field(default="", compare=False, repr=False)  # "file:line: kind", likewise

    def to_dict(self) -> dict[str, Any]:
        """The resolved suite as plain data (what the manifest records)."""
        out = {
            "suite": self.name,
            "version": self.version,
            "kind": self.kind,
            "description": self.description,
            "citation": self.citation,
            "sampling": dict(self.sampling),
            "truncate": self.truncate,
            "scorers": list(self.scorers),
            "analyses": list(self.analyses),
            "probe": self.probe,
            "groups": [{"id": g.id, "text": g.text, "attributes": dict(g.attributes)}
                       | ({"variants": list(g.variants)} if g.variants else {}) for g in self.groups],
            "templates": [{"id": t.id, "context": t.context, "text": t.text} for t in self.templates],
            "comparisons": [list(c) for c in self.comparisons],
        }
        if self.sample:  # only where set, so that the content hash of every other suite stays as it was
            out["sample"] = dict(self.sample)
        if self.samples is not None:  # likewise
            out["samples"] = self.samples
        return out

    @classmethod
    def from_dict(cls, recorded: dict[str, Any]) -> "Suite":
        """The suite a manifest records (its ``suite`` entry: ``resolved``, ``path``, ``content_hash``)."""
        data = recorded["resolved"]
        return cls(name=data["suite"], version=data["version"], description=data["description"],
                   citation=data["citation"], kind=data["kind"],
                   groups=tuple(Group(g["id"], g["text"], dict(g["attributes"]), tuple(g.get("variants", ())))
                                for g in data["groups"]),
                   templates=tuple(Template(t["id"], t["context"], t["text"]) for t in data["templates"]),
                   comparisons=tuple(tuple(c) for c in data["comparisons"]), sampling=dict(data["sampling"]),
                   truncate=data["truncate"], scorers=tuple(data["scorers"]), path=recorded.get("path") or "",
                   analyses=tuple(data["analyses"]), probe=data["probe"], sample=dict(data.get("sample", {})),
                   content_hash=recorded.get("content_hash", ""))


def builtin_dir() -> Path:
    """Folder holding the built-in suite files."""
    return package_path("suites", "data")


def list_suites() -> list[str]:
    """Names of the built-in suites."""
    return sorted(p.stem for p in builtin_dir().glob("*.yaml"))


def resolve_suite_path(name_or_path: str | Path, *, relative_to: Path | None = None) -> Path:
    """Find a suite file from a built-in name (``sheng2019``) or a path to a YAML file."""
    text = str(name_or_path)
    candidates = []
    if relative_to is not None:
        candidates.append(relative_to / text)
    candidates.append(Path(text))
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    stem = Path(text).name
    for suffix in ("", ".yaml"):
        builtin = builtin_dir() / f"{stem}{suffix}"
        if builtin.is_file() and builtin.suffix == ".yaml":
            return builtin
    kind = special_kind(text)
    if kind is not None and kind != "a folder":  # a FIFO, /dev/zero: not "no such file"
        raise SuiteError(f"suite {text}: is {kind}, not a regular file; give a YAML file or a built-in suite name")
    raise SuiteError(f"suite {text}: no such built-in suite or file; built-in suites: {', '.join(list_suites())}")


def load_suite(name_or_path: str | Path) -> Suite:
    """Load, resolve (``include``/``extend``) and validate a suite.

    Parameters
    ----------
    name_or_path : str or pathlib.Path
        A built-in suite name (see :func:`list_suites`) or the path of a YAML file.

    Returns
    -------
    Suite
        Frozen, validated suite with its content hash.

    Raises
    ------
    SuiteError
        With ``file:line: field: problem`` for the first problem found.
    """
    raw = _resolve(resolve_suite_path(name_or_path), seen=())
    return hashed(_build(raw))


def hashed(suite: Suite) -> Suite:
    """``suite`` with ``content_hash`` set: the sha256 of its resolved content (:meth:`Suite.to_dict`)."""
    digest = hashlib.sha256(json.dumps(suite.to_dict(), sort_keys=True).encode()).hexdigest()
    return Suite(**{**suite.__dict__, "content_hash": digest})


# --- reading YAML with line numbers -------------------------------------------------------

@dataclass
class _Doc:
    """One YAML file: its data and the line of every node, keyed by path tuple."""

    path: Path
    data: Any
    lines: dict[tuple, int]

    def where(self, at: tuple) -> str:
        """``file:line`` for the deepest known node on the path ``at``."""
        for cut in range(len(at), -1, -1):
            if at[:cut] in self.lines:
                return f"{self.path}:{self.lines[at[:cut]]}"
        return f"{self.path}:1"

    def fail(self, at: tuple, message: str) -> SuiteError:
        return SuiteError(f"{self.where(at)}: {_dotted(at)}: {message}" if at else f"{self.where(at)}: {message}")


def _unknown_key(key, allowed) -> str:
    """The message for a key a mapping does not take, with the closest allowed key if one is close."""
    close = difflib.get_close_matches(str(key), list(allowed), n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    return f"unknown key; {hint}allowed: {', '.join(allowed)}"


def _dotted(at: tuple) -> str:
    out = ""
    for part in at:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _read(path: Path) -> _Doc:
    try:
        size = path.stat().st_size
        if size > MAX_SUITE_BYTES:
            raise SuiteError(f"{path}: suite file is {size / 1e6:.1f} MB; the limit is {MAX_SUITE_BYTES // 1_000_000} MB "
                             f"(a suite lists templates and groups, not samples)")
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SuiteError(f"{path}: not UTF-8 text") from None
    except OSError as exc:
        raise SuiteError(f"{path}: cannot read ({exc.strerror})") from None
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        data = loader.construct_document(node) if node is not None else None
    except RecursionError:
        raise SuiteError(f"{path}: nested too deeply to be a suite") from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else 1
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise SuiteError(f"{path}:{line}: invalid YAML: {problem}") from None
    finally:
        loader.dispose()
    lines: dict[tuple, int] = {}
    if node is not None:
        try:
            _collect_lines(node, (), lines)
        except RecursionError:
            raise SuiteError(f"{path}: nested too deeply to be a suite") from None
        except _TooLarge as exc:
            raise SuiteError(f"{path}:{exc.args[0]}: more than {MAX_SUITE_NODES:,} YAML values (after expanding "
                             f"aliases); too large to be a suite") from None
        except _DuplicateKey as exc:
            line, at, first = exc.args
            raise SuiteError(f"{path}:{line}: {_dotted(at)}: given twice (first on line {first}); YAML would keep "
                             f"only the last one, so give each key once") from None
    return _Doc(path, data, lines)


class _TooLarge(Exception):
    """Raised with the line where a document passed :data:`MAX_SUITE_NODES`."""


class _DuplicateKey(Exception):
    """Raised with (line, key path, line of the first) for a key given twice in one mapping."""


def _collect_lines(node: yaml.Node, at: tuple, lines: dict[tuple, int]) -> None:
    if len(lines) >= MAX_SUITE_NODES:
        raise _TooLarge(node.start_mark.line + 1)
    lines[at] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key, value in node.value:
            name = key.value if isinstance(key, yaml.ScalarNode) else str(key)
            if name in seen and name != "<<":  # YAML would keep the last value silently
                raise _DuplicateKey(key.start_mark.line + 1, at + (name,), seen[name])
            seen[name] = key.start_mark.line + 1
            _collect_lines(value, at + (name,), lines)
            lines[at + (name,)] = key.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _collect_lines(item, at + (i,), lines)


# --- resolving include / extend ------------------------------------------------------------

@dataclass
class _Item:
    """A list item (group, template, comparison) with the document and path it came from."""

    value: Any
    doc: _Doc
    at: tuple

    def fail(self, sub: tuple, message: str) -> SuiteError:
        return self.doc.fail(self.at + sub, message)


@dataclass
class _Raw:
    doc: _Doc
    scalars: dict[str, tuple[Any, _Doc]]
    lists: dict[str, list[_Item]]
    given: set[str] = field(default_factory=set)  # list keys set explicitly (even empty)


def _resolve(path: Path, *, seen: tuple[Path, ...]) -> _Raw:
    doc = _read(path)
    if not isinstance(doc.data, dict):
        raise doc.fail((), "a suite must be a mapping with keys suite, groups, templates, ...")
    for key in doc.data:
        if key not in TOP_KEYS:
            raise doc.fail((key,), _unknown_key(key, TOP_KEYS))
    if "include" in doc.data:
        target = doc.data["include"]
        if not isinstance(target, str):
            raise doc.fail(("include",), "must be a suite name or a file path")
        try:
            include_path = resolve_suite_path(target, relative_to=path.parent)
        except SuiteError:
            raise doc.fail(("include",), f"{target}: no such built-in suite or file (looked next to this file "
                                         f"and in the built-in suites)") from None
        if include_path.resolve() in seen or include_path.resolve() == path.resolve():
            raise doc.fail(("include",), "includes itself")
        raw = _resolve(include_path, seen=seen + (path.resolve(),))
    else:
        raw = _Raw(doc, {}, {k: [] for k in EXTEND_KEYS})
    for key, value in doc.data.items():
        if key in ("include", "extend"):
            continue
        if key in EXTEND_KEYS:
            raw.lists[key] = _items(doc, (key,), value)
            raw.given.add(key)
        else:
            raw.scalars[key] = (value, doc)
    if "extend" in doc.data:
        extend = doc.data["extend"]
        if not isinstance(extend, dict):
            raise doc.fail(("extend",), f"must be a mapping with keys among {', '.join(EXTEND_KEYS)}")
        for key, value in extend.items():
            if key not in EXTEND_KEYS:
                raise doc.fail(("extend", key), _unknown_key(key, EXTEND_KEYS))
            raw.lists[key] = raw.lists[key] + _items(doc, ("extend", key), value)
            raw.given.add(key)
    raw.doc = doc
    return raw


def _items(doc: _Doc, at: tuple, value: Any) -> list[_Item]:
    if not isinstance(value, list):
        raise doc.fail(at, "must be a list")
    return [_Item(v, doc, at + (i,)) for i, v in enumerate(value)]


# --- validation ----------------------------------------------------------------------------

def _build(raw: _Raw) -> Suite:
    doc = raw.doc
    name, name_doc = raw.scalars.get("suite", (None, doc))
    if not isinstance(name, str) or not ID_PATTERN.match(name) or len(name) > MAX_NAME_LENGTH:
        raise name_doc.fail(("suite",), f"required: a name of letters, digits, '-', '_' or '.', at most "
                                        f"{MAX_NAME_LENGTH} characters")
    version, version_doc = raw.scalars.get("version", (1, doc))
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise version_doc.fail(("version",), f"must be a positive integer, got {version!r}")
    kind, kind_doc = raw.scalars.get("kind", ("generation", doc))
    if not isinstance(kind, str) or not ID_PATTERN.match(kind):
        raise kind_doc.fail(("kind",), f"must be a name such as {' or '.join(KINDS)}, got {kind!r}")
    # A kind other than the built-in ones takes the generation suites' keys; whether a measurement
    # is registered for it is checked where the run is configured (nlgbias.pipeline.measurements).
    kind_at = f"{kind_doc.where(('kind',))}: kind"
    texts = {}
    for key in ("description", "citation"):
        value, value_doc = raw.scalars.get(key, ("", doc))
        if not isinstance(value, str):
            raise value_doc.fail((key,), "must be text")
        texts[key] = value.strip()

    if kind == "pronoun":
        return _pronoun_suite(raw, name=name, version=version, texts=texts)
    if kind == "likelihood":
        return _likelihood_suite(raw, name=name, version=version, texts=texts, kind_at=kind_at)
    for key in PRONOUN_KEYS:
        if key in raw.scalars:
            value_doc = raw.scalars[key][1]
            raise value_doc.fail((key,), "only pronoun suites (kind: pronoun) take this key")
    source, source_doc = raw.scalars.get("groups_from", (None, doc))
    if source is not None and source not in GROUP_SOURCES:
        raise source_doc.fail(("groups_from",), f"must be one of {', '.join(GROUP_SOURCES)}, got {source!r}")
    if source is not None and raw.lists["groups"]:
        raise source_doc.fail(("groups_from",), "a suite takes groups from groups_from or lists them in groups, "
                                                "not both")
    probe: dict[str, Any] = {}
    if "prompt_file" in raw.scalars:
        if source is not None or "prompts_per_group" in raw.scalars:
            key = "groups_from" if source is not None else "prompts_per_group"
            raise raw.scalars[key][1].fail((key,), "a suite with a prompt_file takes its groups and sample size "
                                                   "(per_group) from prompt_file; remove this key")
        groups, probe = _prompt_file(raw)
        templates: list[Template] = []
    else:
        groups = _holistic_groups() if source is not None else _groups(raw.lists["groups"], doc)
        templates = _templates(raw.lists["templates"], doc)
    per_group, per_group_doc = raw.scalars.get("prompts_per_group", (None, doc))
    if per_group is not None and (isinstance(per_group, bool) or not isinstance(per_group, int) or per_group < 1):
        raise per_group_doc.fail(("prompts_per_group",), f"must be a whole number of at least 1, got {per_group!r}")
    default_samples, samples_doc = raw.scalars.get("samples", (None, doc))
    if default_samples is not None and (isinstance(default_samples, bool) or not isinstance(default_samples, int)
                                        or not 1 <= default_samples <= MAX_DEFAULT_SAMPLES):
        raise samples_doc.fail(("samples",), f"samples per prompt when a run does not say: a whole number from 1 "
                                             f"to {MAX_DEFAULT_SAMPLES:,}, got {default_samples!r}")
    count = sum(min(per_group, n) if per_group else n for n in (len(templates) * len(g.texts) for g in groups))
    if count > MAX_PROMPTS:
        raise doc.fail(("templates",), f"{len(templates)} templates x {len(groups)} groups = "
                                       f"{count:,} prompts; the limit is {MAX_PROMPTS:,}")
    # groups from a data set are compared with their axis (the suite's analyses), not pair by pair
    comparisons = _comparisons(raw.lists["comparisons"], groups,
                               default="comparisons" not in raw.given and source is None)
    sampling = _sampling(*raw.scalars.get("sampling", ({}, doc)))
    truncate, truncate_doc = raw.scalars.get("truncate", ("first_sentence", doc))
    if not isinstance(truncate, str) or not TRUNCATE_PATTERN.match(truncate):
        raise truncate_doc.fail(("truncate",), f"must be first_sentence, none or words:N, got {truncate!r}")
    scorers, scorers_doc = raw.scalars.get("scorers", (["regard", "vader", "textblob"], doc))
    if not isinstance(scorers, list) or not all(isinstance(s, str) for s in scorers) or not scorers:
        raise scorers_doc.fail(("scorers",), "must be a non-empty list of scorer names")
    analyses, analyses_doc = raw.scalars.get("analyses", (["shares"], doc))
    if not isinstance(analyses, list) or not analyses or not all(isinstance(a, str) and a for a in analyses):
        raise analyses_doc.fail(("analyses",), "must be a non-empty list of analysis names (e.g. [shares])")
    # The names are checked against the registered analyses where the run is configured
    # (nlgbias.analyses.check_analyses): a plugin may register one after the suite is loaded.
    first = [analyses.index(name_) for name_ in dict.fromkeys(analyses)]
    return Suite(
        name=name, version=version, description=texts["description"], citation=texts["citation"],
        kind=kind, groups=tuple(groups), templates=tuple(templates), comparisons=tuple(comparisons),
        sampling=sampling, truncate=truncate, scorers=tuple(scorers), path=str(doc.path),
        analyses=tuple(dict.fromkeys(analyses)), kind_at=kind_at, probe=probe,
        sample={"prompts_per_group": per_group, "seed": 0} if per_group else {}, samples=default_samples,
        analyses_at=tuple(f"{analyses_doc.where(('analyses', i))}: {_dotted(('analyses', i))}" for i in first),
    )


def _holistic_groups() -> list[Group]:
    """``groups_from: holistic_bias``: one group per HolisticBias descriptor (axis, bucket, preference),
    its variants the descriptor's noun phrases with a definite article, as ROBBIE's HolisticBiasR builds
    them from the noun-phrase types that stand as noun phrases (the noun-only controls, on no axis, left out)."""
    from nlgbias.suites import holistic_bias

    phrases = holistic_bias.noun_phrases([t for t in holistic_bias.STANDING_TYPES if t != "noun"])
    phrases = phrases.assign(group=holistic_bias.descriptor_ids(phrases))
    groups = []
    for gid, rows in phrases.groupby("group", sort=False):
        first = rows.iloc[0]
        texts = tuple(dict.fromkeys(holistic_bias.definite(p) for p in rows["noun_phrase"]))
        groups.append(Group(str(gid), texts[0], {"axis": first["axis"], "descriptor": first["descriptor"],
                                                 "bucket": first["bucket"],
                                                 "preference": first["descriptor_preference"]}, texts))
    return groups


def _prompt_file(raw: _Raw) -> tuple[list[Group], dict[str, Any]]:
    """A suite with ``prompt_file: {source, per_group}``: its groups (one per group of the prompt
    files, ``axis`` = the file's context) and its ``probe`` entry (:mod:`nlgbias.suites.prompt_files`)."""
    value, doc = raw.scalars["prompt_file"]
    for key in ("groups", "templates"):
        if raw.lists[key]:
            raise raw.lists[key][0].doc.fail((key,), "a suite with a prompt_file takes its groups and prompts from "
                                                     "that file; remove this key")
    if not isinstance(value, dict) or not isinstance(value.get("source"), str):
        raise doc.fail(("prompt_file",), "a mapping with source (a folder of <context>_prompt.json files) and "
                                         "per_group (prompts a run samples from each group, or all)")
    for key in value:
        if key not in PROMPT_FILE_KEYS:
            raise doc.fail(("prompt_file", key), _unknown_key(key, PROMPT_FILE_KEYS))
    folder = prompt_folder(value["source"], doc.path.parent)
    if folder is None:
        raise doc.fail(("prompt_file", "source"), f"{value['source']!r}: no folder of JSON prompt files next to the "
                                                   f"suite, at that path or in the package data")
    try:
        per_group = check_per_group(value.get("per_group", 1))
    except InputError:
        raise doc.fail(("prompt_file", "per_group"), "a whole number of at least 1, or all") from None
    table, digest = read_prompt_folder(folder)
    count = sampled_count(table, per_group)
    if count > MAX_PROMPTS:
        raise doc.fail(("prompt_file", "per_group"), f"{per_group}: {count:,} prompts from {folder}; the limit is "
                                                     f"{MAX_PROMPTS:,} (give a number of prompts per group)")
    groups = []
    for context, group in dict.fromkeys(zip(table["context"], table["group"])):
        if not ID_PATTERN.match(group):
            raise doc.fail(("prompt_file", "source"), f"{folder}: group {group!r} is not a usable id")
        groups.append(Group(group, group.replace("_", " "), {"axis": context}))
    if len({g.id for g in groups}) != len(groups):
        raise doc.fail(("prompt_file", "source"), f"{folder}: a group appears in two contexts")
    return groups, {"prompt_file": {"source": value["source"], "per_group": per_group, "seed": 0,
                                    "sha256": digest, "prompts": int(len(table))}}


def _need_text(item: _Item, key: str) -> str:
    value = item.value.get(key)
    if not isinstance(value, str) or not value.strip():
        raise item.fail((key,) if key in item.value else (), f"{key!r} is required and must be non-empty text")
    return value


def _groups(items: list[_Item], doc: _Doc) -> list[Group]:
    if not items:
        raise doc.fail(("groups",), "required: a non-empty list of groups")
    groups: list[Group] = []
    seen_ids: dict[str, int] = {}
    seen_texts: dict[str, int] = {}
    for index, item in enumerate(items):
        if not isinstance(item.value, dict):
            raise item.fail((), "each group must be a mapping with id, text and attributes")
        for key in item.value:
            if key not in ("id", "text", "attributes"):
                raise item.fail((key,), _unknown_key(key, ("id", "text", "attributes")))
        gid = _need_text(item, "id")
        if not ID_PATTERN.match(gid):
            raise item.fail(("id",), f"{gid!r} must start with a letter or digit and use letters, digits, spaces, _ . ' -")
        text = _need_text(item, "text")
        if gid in seen_ids:
            raise item.fail(("id",), f"duplicate group {gid!r} (first defined as groups[{seen_ids[gid]}])")
        if text in seen_texts:
            raise item.fail(("text",), f"duplicate group text {text!r} (also groups[{seen_texts[text]}])")
        attributes = item.value.get("attributes")
        if not isinstance(attributes, dict) or not isinstance(attributes.get("axis"), str):
            raise item.fail(("attributes",) if "attributes" in item.value else (),
                            "attributes must be a mapping that names the group's axis (e.g. axis: gender)")
        for key, value in attributes.items():
            if not isinstance(key, str) or not re.match(r"^[a-z][a-z0-9_]*$", key):
                raise item.fail(("attributes", key), "attribute names are lower-case letters, digits and _")
            if key in RESERVED_ATTRIBUTES:
                raise item.fail(("attributes", key), f"{key!r} is a column name nlgbias uses; pick another name")
            if not isinstance(value, (str, int, float, bool)):
                raise item.fail(("attributes", key), "attribute values must be text or numbers")
        seen_ids[gid] = index
        seen_texts[text] = index
        groups.append(Group(gid, text, {k: str(v) for k, v in attributes.items()}))
    return groups


def _templates(items: list[_Item], doc: _Doc) -> list[Template]:
    if not items:
        raise doc.fail(("templates",), "required: a non-empty list of templates")
    templates: list[Template] = []
    seen: dict[str, int] = {}
    for index, item in enumerate(items):
        if not isinstance(item.value, dict):
            raise item.fail((), "each template must be a mapping with id, context and text")
        for key in item.value:
            if key not in ("id", "context", "text"):
                raise item.fail((key,), _unknown_key(key, ("id", "context", "text")))
        tid = _need_text(item, "id")
        if not ID_PATTERN.match(tid):
            raise item.fail(("id",), f"{tid!r} must start with a letter or digit and use letters, digits, spaces, _ . ' -")
        if tid in seen:
            raise item.fail(("id",), f"duplicate template {tid!r} (first defined as templates[{seen[tid]}])")
        context = _need_text(item, "context")
        text = _need_text(item, "text")
        names = PLACEHOLDER.findall(text)
        unknown = [n for n in names if n != "group"]
        if unknown:
            raise item.fail(("text",), f"uses {{{unknown[0]}}}, which is not defined; the only placeholder is {{group}}")
        if names.count("group") != 1:
            raise item.fail(("text",), "must contain the {group} placeholder exactly once"
                            if names else "has no {group} placeholder")
        seen[tid] = index
        templates.append(Template(tid, context, text))
    _check_contexts(templates, items)
    return templates


def _check_contexts(templates: list[Template], items: list[_Item]) -> None:
    """A context is free text, but one that nearly spells another is taken for a typo: an error.

    An error, not a warning: a typo would otherwise split a context's prompts into two contexts
    with their own shares and gaps, silently, and a warning scrolls past while the run goes on
    for hours.  The rival is a context more templates of the suite use, or a built-in one
    (``KNOWN_CONTEXTS``); a context that is not close to any rival is a new context, accepted.
    """
    counts = Counter(t.context for t in templates)
    for template, item in zip(templates, items):
        rivals = [c for c in dict.fromkeys([*counts, *KNOWN_CONTEXTS])
                  if c != template.context and (c in KNOWN_CONTEXTS or counts[c] > counts[template.context])]
        close = difflib.get_close_matches(template.context, rivals, n=1, cutoff=CONTEXT_TYPO)
        if close:
            raise item.fail(("context",), f"{template.context!r}: did you mean {close[0]!r}? (a context this close "
                                          f"to another is taken for a typo; give a clearly different name for a new "
                                          f"context)")


def _comparisons(items: list[_Item], groups: list[Group], *, default: bool) -> list[tuple[str, str]]:
    known = {g.id for g in groups}
    pairs: list[tuple[str, str]] = []
    for item in items:
        value = item.value
        if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value)):
            raise item.fail((), "each comparison is a pair of group ids, e.g. [man, woman]")
        for i, gid in enumerate(value):
            if gid not in known:
                raise item.fail((i,), f"unknown group {gid!r}; groups: {', '.join(sorted(known))}")
        if value[0] == value[1]:
            raise item.fail((), f"compares {value[0]!r} with itself")
        if tuple(value) in pairs or tuple(value[::-1]) in pairs:
            raise item.fail((), f"duplicate comparison {value}")
        pairs.append((value[0], value[1]))
    if default:  # no comparisons key anywhere: every pair of groups on the same axis
        for i, a in enumerate(groups):
            for b in groups[i + 1:]:
                if a.axis == b.axis:
                    pairs.append((a.id, b.id))
    return pairs


def _sampling(value: Any, doc: _Doc) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise doc.fail(("sampling",), "must be a mapping")
    out: dict[str, Any] = {}
    for key, raw in value.items():
        if key not in SAMPLING_KEYS:
            raise doc.fail(("sampling", key), _unknown_key(key, SAMPLING_KEYS))
        kind = SAMPLING_KEYS[key]
        ok = isinstance(raw, (int, float)) and not isinstance(raw, bool)
        if kind is int:
            ok = ok and float(raw).is_integer()
        if not ok:
            raise doc.fail(("sampling", key), f"must be a number, got {raw!r}")
        out[key] = kind(raw)
    try:
        SamplingParams(**out)
    except ValueError as exc:
        raise doc.fail(("sampling",), str(exc)) from None
    return out


# --- pronoun-probability suites --------------------------------------------------------------

def _pronoun_suite(raw: _Raw, *, name: str, version: int, texts: dict[str, str]) -> Suite:
    """A suite of ``kind: pronoun``: prompt sets read from CSV files, no groups or sampling."""
    doc = raw.doc
    for key in ("groups", "templates", "comparisons"):
        if raw.lists[key]:
            raise raw.lists[key][0].doc.fail((key,), "pronoun suites take prompt_sets, not groups/templates")
    for key in ("sampling", "truncate", "scorers", "analyses"):
        if key in raw.scalars:
            raise raw.scalars[key][1].fail((key,), "pronoun suites do not sample or score text; remove this key")
    sets_value, sets_doc = raw.scalars.get("prompt_sets", (None, doc))
    if not isinstance(sets_value, list) or not sets_value:
        raise sets_doc.fail(("prompt_sets",), "required: a non-empty list of {id, source[, professions]}")
    prompt_sets = []
    seen: set[str] = set()
    for index, entry in enumerate(sets_value):
        at = ("prompt_sets", index)
        if not isinstance(entry, dict):
            raise sets_doc.fail(at, "each prompt set is a mapping with id and source")
        for key in entry:
            if key not in PROMPT_SET_KEYS:
                raise sets_doc.fail(at + (key,), _unknown_key(key, PROMPT_SET_KEYS))
        set_id, source = entry.get("id"), entry.get("source")
        if not isinstance(set_id, str) or not ID_PATTERN.match(set_id):
            raise sets_doc.fail(at + ("id",), "required: a name of letters, digits, '-', '_' or '.'")
        if set_id in seen:
            raise sets_doc.fail(at + ("id",), f"duplicate prompt set {set_id!r}")
        seen.add(set_id)
        if not isinstance(source, str):
            raise sets_doc.fail(at + ("source",), "required: a CSV file (built-in name or path)")
        path = _data_file(source, sets_doc.path.parent)
        if path is None:
            raise sets_doc.fail(at + ("source",), f"file {source!r} not found next to the suite or built in")
        professions = entry.get("professions")
        if professions is not None and professions != "debiaswe" and _data_file(professions, sets_doc.path.parent) is None:
            raise sets_doc.fail(at + ("professions",), "use debiaswe or a CSV file with a profession column")
        prompt_sets.append({"id": set_id, "source": source, "professions": professions,
                            "source_sha256": hashlib.sha256(path.read_bytes()).hexdigest()})
    continuations, cont_doc = raw.scalars.get("continuations", (["he", "she", "they", "his", "her", "him", "hers",
                                                                 "them", "their"], doc))
    if not isinstance(continuations, list) or not continuations or not all(
            isinstance(c, str) and c.strip() == c and c for c in continuations):
        raise cont_doc.fail(("continuations",), "a list of words without spaces, e.g. [he, she, they]")
    for needed in ("he", "she"):
        if needed not in continuations:
            raise cont_doc.fail(("continuations",), f"must include {needed!r}")
    perturbations, pert_doc = raw.scalars.get("perturbations", (list(PERTURBATIONS), doc))
    if not isinstance(perturbations, list) or "orig" not in perturbations or not set(perturbations) <= set(PERTURBATIONS):
        raise pert_doc.fail(("perturbations",), f"a list among {', '.join(PERTURBATIONS)} that includes orig")
    saliency, sal_doc = raw.scalars.get("saliency_prompts", (200, doc))
    if not isinstance(saliency, int) or isinstance(saliency, bool) or saliency < 0:
        raise sal_doc.fail(("saliency_prompts",), "a whole number of prompts per set (0: no saliency)")
    default_probe, def_doc = raw.scalars.get("default_probe", (True, doc))
    if not isinstance(default_probe, bool):
        raise def_doc.fail(("default_probe",), "true or false")
    per_set, per_doc = raw.scalars.get("prompts_per_set", (None, doc))
    if per_set is not None and (not isinstance(per_set, int) or isinstance(per_set, bool) or per_set < 1):
        raise per_doc.fail(("prompts_per_set",), "a whole number of at least 1: a seeded subset of each prompt "
                                                 "set's prompts, every perturbation of each kept (leave it out "
                                                 "for all)")
    probe = {"prompt_sets": prompt_sets, "continuations": continuations,
             "perturbations": [p for p in PERTURBATIONS if p in perturbations],
             "saliency_prompts": saliency, "default_probe": default_probe,
             **({"prompts_per_set": per_set} if per_set is not None else {})}  # absent: the hash of a full suite stays
    return Suite(name=name, version=version, description=texts["description"], citation=texts["citation"],
                 kind="pronoun", groups=(), templates=(), comparisons=(), sampling={}, truncate="none", scorers=(),
                 path=str(doc.path), analyses=PRONOUN_ANALYSES, probe=probe)


def _likelihood_suite(raw: _Raw, *, name: str, version: int, texts: dict[str, str], kind_at: str) -> Suite:
    """A suite of ``kind: likelihood``: the HolisticBias sentences (``groups_from: holistic_bias``), scored
    by the model's likelihood; no groups, templates or sampling of its own."""
    doc = raw.doc
    for key in ("groups", "templates", "comparisons"):
        if raw.lists[key]:
            raise raw.lists[key][0].doc.fail((key,), "likelihood suites take their sentences from groups_from")
    for key in ("sampling", "truncate", "scorers", *PRONOUN_KEYS):
        if key in raw.scalars:
            raise raw.scalars[key][1].fail((key,), "likelihood suites neither sample nor score text")
    source, source_doc = raw.scalars.get("groups_from", (None, doc))
    if source not in GROUP_SOURCES:
        raise source_doc.fail(("groups_from",), f"required: one of {', '.join(GROUP_SOURCES)}, got {source!r}")
    per_group, per_group_doc = raw.scalars.get("prompts_per_group", (None, doc))
    if per_group is not None and (isinstance(per_group, bool) or not isinstance(per_group, int) or per_group < 1):
        raise per_group_doc.fail(("prompts_per_group",), f"must be a whole number of at least 1, got {per_group!r}")
    analyses, analyses_doc = raw.scalars.get("analyses", (["holisticbias_likelihood"], doc))
    if not isinstance(analyses, list) or not analyses or not all(isinstance(a, str) and a for a in analyses):
        raise analyses_doc.fail(("analyses",), "must be a non-empty list of analysis names")
    return Suite(name=name, version=version, description=texts["description"], citation=texts["citation"],
                 kind="likelihood", groups=(), templates=(), comparisons=(), sampling={}, truncate="none", scorers=(),
                 path=str(doc.path), analyses=tuple(dict.fromkeys(analyses)), probe={"groups_from": source},
                 sample={"prompts_per_group": per_group, "seed": 0} if per_group else {}, kind_at=kind_at,
                 analyses_at=tuple(f"{analyses_doc.where(('analyses', i))}: {_dotted(('analyses', i))}"
                                   for i in range(len(analyses))))


def data_file(suite: Suite, name: str) -> Path:
    """A data file a suite names (``source``, ``professions``): next to the suite file, or built in."""
    path = _data_file(name, Path(suite.path).parent)
    if path is None:
        raise SuiteError(f"{suite.path}: data file {name!r} not found next to the suite or built in")
    return path


def _data_file(name: str, folder: Path) -> Path | None:
    for candidate in (folder / name, Path(name), builtin_dir() / name):
        if candidate.is_file():
            return candidate
    return None
