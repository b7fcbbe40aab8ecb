"""Pronoun probabilities after a prompt, the model's certainty, its default behaviour, and saliency.

The probability engine behind the natural-sentence vs template comparison of gender–occupation
bias (*Using Natural Sentence Prompts for Understanding Biases in Language Models*): for each
prompt x it gives P(he | x), P(she | x) and any other continuation; from the same forward pass
the model's certainty (its highest next-token probability and the gap to the second); the
probability of each continuation as the first word after the start-of-text token alone (the
model's default behaviour); the gradient saliency of the profession word and of the last token;
and the Orig / Replace / Delete perturbations of a template prompt.

Every function that runs a model takes an :class:`~nlgbias.models.hf.HFBackend` and uses its
``model`` (float32, eval mode), ``tokenizer`` and ``device``.  Tables go in and out: ``prompts``
is a sequence of strings, a ``pandas.Series``, or a ``DataFrame`` with a ``prompt`` column whose
other columns (ids, profession, template ...) pass through untouched, so each output row joins
back to its prompt by index.

Conventions
-----------
* A prompt is tokenized as the backend tokenizes a context (``tokenizer(prompt)``, with whatever
  special tokens that tokenizer adds).  An empty prompt is the start token alone (see
  :func:`start_token_id`).
* A continuation is tokenized on its own, without special tokens, and its word-boundary space
  belongs to it (``" he"``), as in lm-evaluation-harness: a prompt should not end with a space.
* A continuation's probability is the token-level probability of its tokens following the
  prompt (the chain rule over its tokens); it does not require a word boundary after it.
* A prompt that does not fit the model's context (``config.max_position_embeddings``) is an
  error (:class:`~nlgbias.errors.BackendError` naming the prompt and the lengths); prompts are
  never truncated.
* Prompts are sorted by length and right-padded in batches; each row is read at its own last
  real position, so results do not depend on the batch size or on which prompts share a batch
  (to float32 rounding, well under 1e-5).
"""

from __future__ import annotations

import inspect
import re
from typing import Any, Iterator, Sequence

import numpy as np
import pandas as pd

from nlgbias.errors import BackendError, InputError

PRONOUNS: tuple[str, ...] = (" he", " she", " they", " his", " her", " him", " hers", " them", " their")
"""Default continuations: the pronouns, each with its leading space."""

PERTURBATIONS: tuple[str, ...] = ("orig", "replace", "delete")
"""The three prompts :func:`perturb` makes, in this order."""

CERTAINTY_COLUMNS = ["top1", "top1_token", "top1_id", "top2", "gap"]

EMPTY_CONTINUATION = "continuation {continuation!r}: tokenizes to nothing for model {model}"
DUPLICATE_CONTINUATION = ("continuations {first!r} and {second!r}: both name the column {name!r}; "
                          "give each word once")
COLUMN_CLASH = ("{where}: the output column {name!r} is already a column of the prompts table; "
                "rename it there or drop it")
PROMPT_TOO_LONG = ("model {model}: prompt {index} needs {needed} positions ({n} prompt tokens + {extra} "
                   "for the longest continuation) but its context is {limit}")
NO_START = "model {model}: has no start or end-of-text token, so its default behaviour cannot be probed"
UNKNOWN_START = "start token {token!r}: not a single token of model {model}"
NOT_A_PROMPT = "{where}: prompt {index} is {value!r}, not a string"
NO_PROMPT_COLUMN = "{where}: column 'prompt' missing from prompts table; got {columns}"
WORD_NOT_FOUND = "saliency: word {word!r} not found as a whole word in prompt {index} ({prompt!r})"
WORD_COUNT = "saliency: {n_words} words for {n_prompts} prompts; give one word (or None) per prompt"
NO_PROFESSION_PLACEHOLDER = "template {template!r}: has no {{profession}} placeholder"
NO_ARTICLE = "template {template!r}: has an {{article}} placeholder but no article was given"


# --- inputs -------------------------------------------------------------------------------

def _missing(value) -> bool:
    return value is None or (not isinstance(value, str) and bool(pd.isna(value)))


def _prompt_table(prompts, where: str) -> pd.DataFrame:
    """The prompts as a DataFrame with a string ``prompt`` column (other columns kept)."""
    if isinstance(prompts, str):
        raise InputError(f"{where}: prompts must be a sequence of strings, not one string")
    if isinstance(prompts, pd.DataFrame):
        if "prompt" not in prompts.columns:
            raise InputError(NO_PROMPT_COLUMN.format(where=where, columns=", ".join(map(str, prompts.columns))))
        table = prompts.copy()
    elif isinstance(prompts, pd.Series):
        table = pd.DataFrame({"prompt": prompts.to_numpy(dtype=object)}, index=prompts.index)
    else:
        table = pd.DataFrame({"prompt": list(prompts)})
    for index, value in zip(table.index, table["prompt"]):
        if not isinstance(value, str):
            raise InputError(NOT_A_PROMPT.format(where=where, index=index, value=value))
    return table


def _add_columns(table: pd.DataFrame, columns: dict[str, Any], where: str) -> pd.DataFrame:
    for name in columns:
        if name in table.columns:
            raise InputError(COLUMN_CLASH.format(where=where, name=name))
    return pd.concat([table, pd.DataFrame(columns, index=table.index)], axis=1)


def _continuations(backend, continuations: Sequence[str]) -> tuple[list[str], list[list[int]]]:
    """(column names, token ids) of the continuations; errors for empty or duplicate ones."""
    if isinstance(continuations, str):
        continuations = [continuations]
    tok = backend.tokenizer
    names: list[str] = []
    ids: list[list[int]] = []
    seen: dict[str, str] = {}
    for text in continuations:
        token_ids = list(tok(text, add_special_tokens=False)["input_ids"]) if text else []
        if not token_ids:
            raise BackendError(EMPTY_CONTINUATION.format(continuation=text, model=backend.model_id))
        name = text.strip()
        if name in seen:
            raise InputError(DUPLICATE_CONTINUATION.format(first=seen[name], second=text, name=name))
        seen[name] = text
        names.append(name)
        ids.append(token_ids)
    return names, ids


def start_token_id(backend, token: str | None = None) -> int:
    """The id of the token that stands for "start of text": BOS, else EOS.

    GPT-2 has no BOS of its own and starts documents with ``<|endoftext|>`` (its EOS), hence the
    fall-back.  ``token`` names another token instead (e.g. ``"<|endoftext|>"`` for SmolLM2, whose
    tokenizer calls ``<|im_start|>`` its BOS).

    Raises
    ------
    BackendError
        The tokenizer has neither a BOS nor an EOS token, or ``token`` is not one of its tokens.
    """
    tok = backend.tokenizer
    if token is not None:
        token_id = tok.convert_tokens_to_ids(token)
        if token_id is None or (token_id == tok.unk_token_id and token != tok.unk_token):
            raise BackendError(UNKNOWN_START.format(token=token, model=backend.model_id))
        return int(token_id)
    for attr in ("bos_token_id", "eos_token_id"):
        token_id = getattr(tok, attr, None)
        if token_id is not None:
            return int(token_id)
    raise BackendError(NO_START.format(model=backend.model_id))


def _prompt_ids(backend, prompts: list[str]) -> list[list[int]]:
    tok = backend.tokenizer
    encoded = tok(prompts)["input_ids"] if prompts else []
    out = []
    for prompt, ids in zip(prompts, encoded):
        ids = list(ids) if prompt else []
        out.append(ids or [start_token_id(backend)])
    return out


def _context_limit(backend) -> int | None:
    limit = getattr(backend.model.config, "max_position_embeddings", None)
    return int(limit) if limit else None


def _check_lengths(backend, index: Sequence, prompt_ids: list[list[int]], extra: int) -> None:
    limit = _context_limit(backend)
    if not limit:
        return
    for label, ids in zip(index, prompt_ids):
        if len(ids) + extra > limit:
            raise BackendError(PROMPT_TOO_LONG.format(model=backend.model_id, index=label, needed=len(ids) + extra,
                                                      n=len(ids), extra=extra, limit=limit))


# --- forward passes -----------------------------------------------------------------------

def _keeps_logits(model) -> bool:
    return "logits_to_keep" in inspect.signature(model.forward).parameters


def _padded(backend, seqs: list[list[int]]):
    """Right-padded ids and attention mask on the backend's device."""
    import torch

    pad = backend.tokenizer.pad_token_id
    pad = 0 if pad is None else int(pad)  # masked out, so any id will do
    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for row, seq in enumerate(seqs):
        ids[row, :len(seq)] = torch.tensor(seq, dtype=torch.long)
        mask[row, :len(seq)] = 1
    return ids.to(backend.device), mask.to(backend.device)


def _batches(lengths: Sequence[int], batch_size: int) -> Iterator[list[int]]:
    """Indices in batches of similar length (sorted by length, then by position)."""
    if batch_size < 1:
        raise InputError(f"batch_size {batch_size}: must be at least 1")
    order = sorted(range(len(lengths)), key=lambda i: (lengths[i], i))
    for start in range(0, len(order), batch_size):
        yield order[start:start + batch_size]


def _tail_logprobs(backend, seqs: list[list[int]], tails: list[int], *, batch_size: int):
    """Yield ``(i, logp)`` per sequence: float64 log-softmax rows at its last ``tails[i]`` real positions.

    One forward pass per batch of right-padded sequences; logits are kept only for the positions
    some row needs (``logits_to_keep``, where the model supports it).
    """
    import torch

    model = backend.model
    keeps = _keeps_logits(model)
    for chunk in _batches([len(s) for s in seqs], batch_size):
        width = max(len(seqs[i]) for i in chunk)
        keep = max(width - len(seqs[i]) + tails[i] for i in chunk)
        ids, mask = _padded(backend, [seqs[i] for i in chunk])
        with torch.inference_mode():
            extra = {"logits_to_keep": keep} if keeps else {}
            logits = model(input_ids=ids, attention_mask=mask, **extra).logits[:, -keep:, :]
            rows, spans = [], []
            for row, i in enumerate(chunk):
                end = len(seqs[i]) - width + keep  # one past the row's last real position, in kept logits
                rows.append(logits[row, end - tails[i]:end])
                spans.append(tails[i])
            logp = torch.log_softmax(torch.cat(rows).double(), dim=-1).cpu()
        start = 0
        for i, span in zip(chunk, spans):
            yield i, logp[start:start + span]
            start += span


def _probabilities(backend, prompt_ids: list[list[int]], cont_ids: list[list[int]], *, batch_size: int):
    """(probabilities [n_prompts, n_continuations], certainty dict of arrays)."""
    import torch

    n, m = len(prompt_ids), len(cont_ids)
    probs = np.zeros((n, m))
    firsts = sorted({ids[0] for ids in cont_ids})
    column = {t: k for k, t in enumerate(firsts)}
    single = [j for j, ids in enumerate(cont_ids) if len(ids) == 1]
    single_cols = [column[cont_ids[j][0]] for j in single]
    first_ids = torch.tensor(firsts, dtype=torch.long)
    top1, top2 = np.zeros(n), np.zeros(n)
    top1_id = np.zeros(n, dtype=np.int64)
    for i, logp in _tail_logprobs(backend, prompt_ids, [1] * n, batch_size=batch_size):
        row = logp[0]
        values, indices = torch.topk(row, min(2, row.shape[-1]))
        top1[i], top1_id[i] = float(values[0].exp()), int(indices[0])
        top2[i] = float(values[1].exp()) if len(values) > 1 else 0.0
        if single:
            probs[i, single] = row[first_ids].exp().numpy()[single_cols]
    # Multi-token continuations: the chain rule, one sequence per (prompt, continuation).
    pairs = [(i, j) for j, ids in enumerate(cont_ids) if len(ids) > 1 for i in range(n)]
    seqs = [prompt_ids[i] + cont_ids[j][:-1] for i, j in pairs]
    tails = [len(cont_ids[j]) for _, j in pairs]
    for k, logp in _tail_logprobs(backend, seqs, tails, batch_size=batch_size):
        i, j = pairs[k]
        target = torch.tensor(cont_ids[j], dtype=torch.long)
        probs[i, j] = float(np.exp(logp[torch.arange(len(target)), target].sum().item()))
    decode = backend.tokenizer.decode
    certainty = {"top1": top1, "top1_token": [decode([int(t)]) for t in top1_id], "top1_id": top1_id,
                 "top2": top2, "gap": top1 - top2}
    return probs, certainty


# --- public: probabilities ----------------------------------------------------------------

def continuation_probabilities(backend, prompts, continuations: Sequence[str] = PRONOUNS, *,
                               batch_size: int = 32) -> pd.DataFrame:
    """Probability of each continuation as the next word(s) after each prompt, and the certainty.

    Parameters
    ----------
    backend : HFBackend
        The model (float32, eval mode) and its tokenizer.
    prompts : sequence of str, pandas.Series or pandas.DataFrame
        The prompts; a DataFrame needs a ``prompt`` column and keeps all its columns and index.
    continuations : sequence of str, default=PRONOUNS
        Continuations with their leading space (``" he"``).  Each names its output column by
        its stripped text (``"he"``), so two continuations may not strip to the same word.
        A single string is one continuation.
    batch_size : int, default=32
        Prompts per forward pass.  Results do not depend on it.

    Returns
    -------
    pandas.DataFrame
        One row per prompt (the input's index and columns, or ``prompt`` alone), then:

        ``model``
            ``backend.model_id``.
        ``n_tokens``
            Tokens in the prompt as the model sees it.
        one column per continuation, named by its stripped text
            P(continuation | prompt), float64.
        ``top1``, ``top1_token``, ``top1_id``
            The highest next-token probability, that token (decoded) and its id.
        ``top2``, ``gap``
            The second-highest probability and ``top1 - top2`` (the model's certainty).

    Raises
    ------
    BackendError
        A continuation tokenizes to nothing (``continuation '': tokenizes to nothing for model
        M``), or a prompt plus the longest continuation does not fit the model's context
        (the message names the prompt's index and the lengths).
    InputError
        Two continuations strip to the same word, an output column already exists in the
        prompts table, or a prompt is not a string.

    Notes
    -----
    Single-token continuations and the certainty columns come from one forward pass per batch
    of prompts: prompts are sorted by length, right-padded, and each row's logits are read at
    its last real position; the softmax is taken in float64.  A continuation of k > 1 tokens
    is scored by the chain rule, ``P(t1 | x) P(t2 | x t1) ... P(tk | x t1 ... tk-1)``, from a
    forward pass over ``x t1 ... tk-1``.  Prompts are never truncated.

    References
    ----------
    Vig et al. (2020), *Causal mediation analysis for interpreting neural NLP: the case of gender
    bias*; the natural-sentence prompts paper (Table 3, Table 6).

    Examples
    --------
    With a loaded backend (not run as a doctest)::

        table = continuation_probabilities(backend, ["The nurse said that"], [" he", " she"])
        list(table.columns)
        # ['prompt', 'model', 'n_tokens', 'he', 'she', 'top1', 'top1_token', 'top1_id', 'top2', 'gap']
    """
    where = "continuation_probabilities"
    table = _prompt_table(prompts, where)
    names, cont_ids = _continuations(backend, continuations)
    prompt_ids = _prompt_ids(backend, table["prompt"].tolist())
    _check_lengths(backend, table.index, prompt_ids, max((len(c) - 1 for c in cont_ids), default=0))
    probs, certainty = _probabilities(backend, prompt_ids, cont_ids, batch_size=batch_size)
    columns: dict[str, Any] = {"model": [backend.model_id] * len(table), "n_tokens": [len(p) for p in prompt_ids]}
    for j, name in enumerate(names):
        columns[name] = probs[:, j]
    columns.update(certainty)
    return _add_columns(table, columns, where)


def start_token_probabilities(backend, continuations: Sequence[str] = PRONOUNS, *,
                              start_token: str | None = None) -> pd.Series:
    """Probability of each continuation as the first word after the start-of-text token alone.

    This is the model's default behaviour, with no prompt at all (Figure 1 of the
    natural-sentence prompts paper, which feeds GPT-2 ``<|endoftext|>``).

    Parameters
    ----------
    backend : HFBackend
    continuations : sequence of str, default=PRONOUNS
    start_token : str, optional
        The token to start from.  Default: the tokenizer's BOS token, or its EOS token when it
        has no BOS (GPT-2); see :func:`start_token_id`.

    Returns
    -------
    pandas.Series
        Float64 probabilities indexed by the stripped continuation (``"he"``), named
        ``backend.model_id`` so that several models concatenate into one table with
        ``pandas.concat(series, axis=1)``.  ``attrs["start_token"]`` holds the token used.

    Raises
    ------
    BackendError
        ``model M: has no start or end-of-text token, so its default behaviour cannot be probed``,
        or a continuation tokenizes to nothing.
    """
    names, cont_ids = _continuations(backend, continuations)
    start = start_token_id(backend, start_token)
    _check_lengths(backend, ["<start>"], [[start]], max((len(c) - 1 for c in cont_ids), default=0))
    probs, _ = _probabilities(backend, [[start]], cont_ids, batch_size=32)
    series = pd.Series(probs[0], index=pd.Index(names, name="continuation"), name=backend.model_id)
    series.attrs["start_token"] = backend.tokenizer.convert_ids_to_tokens(start)
    return series


# --- public: saliency ---------------------------------------------------------------------

def _token_offsets(tok, prompt: str, ids: list[int]) -> list[tuple[int, int]]:
    """Character span of each token in ``prompt`` ((0, 0) for special tokens)."""
    try:
        enc = tok(prompt, return_offsets_mapping=True)
        if list(enc["input_ids"]) == ids:
            return [tuple(span) for span in enc["offset_mapping"]]
    except (NotImplementedError, TypeError, ValueError):
        pass
    # Slow tokenizers: the end of each token is the length of the decoded prefix.
    special = set(tok.all_special_ids)
    spans, end = [], 0
    for k in range(len(ids)):
        if ids[k] in special:
            spans.append((end, end))
            continue
        new_end = len(tok.decode(ids[:k + 1], skip_special_tokens=True))
        spans.append((end, new_end))
        end = new_end
    return spans


def _word_span(word: str, prompt: str, index) -> tuple[int, int]:
    pattern = r"(?<!\w)" + r"\s+".join(map(re.escape, word.split())) + r"(?!\w)"
    match = re.search(pattern, prompt, flags=re.IGNORECASE) if word.strip() else None
    if match is None:
        raise InputError(WORD_NOT_FOUND.format(word=word, index=index, prompt=prompt))
    return match.span()


def saliency(backend, prompts, words: Sequence[str | None] | None = None, *, batch_size: int = 8) -> pd.DataFrame:
    """Gradient saliency of the profession word(s) and of the last token of each prompt.

    For each prompt, the top next-token logit at the last position is differentiated with
    respect to the input embeddings; each token's saliency is the L2 norm of its gradient,
    **normalised so that the saliencies of all the prompt's tokens sum to 1**.

    Parameters
    ----------
    backend : HFBackend
    prompts : sequence of str, pandas.Series or pandas.DataFrame
        As in :func:`continuation_probabilities`.
    words : sequence of (str or None), optional
        The profession word(s) inside each prompt (``"adjunct professor"``), or None where there is
        none (a Delete perturbation).  Found as the first whole-word, case-insensitive match;
        several words may be separated by any whitespace.
    batch_size : int, default=8
        Prompts per forward/backward pass (rows do not interact, so this changes only speed).

    Returns
    -------
    pandas.DataFrame
        One row per prompt (the input's index and columns, or ``prompt`` alone), then:

        ``model``, ``n_tokens``
            ``backend.model_id``; tokens in the prompt (special tokens included).
        ``target_token``
            The token whose logit was differentiated (the model's top prediction), decoded.
        ``n_profession_tokens``
            Tokens that overlap the word's characters (0 without a word).
        ``profession_saliency``
            Sum of the normalised saliencies of those tokens (NaN without a word).
        ``last_saliency``
            Normalised saliency of the prompt's last token.

    Raises
    ------
    InputError
        A word is not found in its prompt, or ``words`` and ``prompts`` differ in length.

    Notes
    -----
    Tokens are matched to the word by character offsets (the fast tokenizer's offset mapping,
    or decoded prefixes for slow tokenizers): a token belongs to the word when their character
    spans overlap.  The normalisation includes every input token, special tokens too.  Batches
    are right-padded; padding comes after each row's last real token, so it receives no gradient.

    References
    ----------
    Simonyan et al. (2014), gradient saliency; the natural-sentence prompts paper, Table 5.
    """
    import torch

    where = "saliency"
    table = _prompt_table(prompts, where)
    texts = table["prompt"].tolist()
    word_list = [None] * len(texts) if words is None else list(words)
    if len(word_list) != len(texts):
        raise InputError(WORD_COUNT.format(n_words=len(word_list), n_prompts=len(texts)))
    tok, model = backend.tokenizer, backend.model
    prompt_ids = _prompt_ids(backend, texts)
    _check_lengths(backend, table.index, prompt_ids, 0)
    members: list[list[int]] = []
    for index, text, ids, word in zip(table.index, texts, prompt_ids, word_list):
        if _missing(word):
            members.append([])
            continue
        lo, hi = _word_span(str(word), text, index)
        spans = _token_offsets(tok, text, ids)
        members.append([k for k, (s, e) in enumerate(spans) if e > s and s < hi and e > lo])
    n = len(texts)
    profession, last = np.full(n, np.nan), np.zeros(n)
    target = [""] * n
    embed = model.get_input_embeddings()
    keeps = _keeps_logits(model)
    for chunk in _batches([len(p) for p in prompt_ids], batch_size):
        ids, mask = _padded(backend, [prompt_ids[i] for i in chunk])
        lengths = torch.tensor([len(prompt_ids[i]) for i in chunk], device=ids.device)
        width = ids.shape[1]
        keep = width - int(lengths.min()) + 1
        with torch.inference_mode(False), torch.enable_grad():
            inputs = embed(ids).detach().requires_grad_(True)
            extra = {"logits_to_keep": keep} if keeps else {}
            logits = model(inputs_embeds=inputs, attention_mask=mask, **extra).logits[:, -keep:, :]
            rows = torch.arange(len(chunk), device=ids.device)
            last_logits = logits[rows, lengths - 1 - width + keep]
            top = last_logits.argmax(dim=-1)
            (grad,) = torch.autograd.grad(last_logits[rows, top].sum(), inputs)
        norms = grad.detach().double().norm(dim=-1).cpu().numpy()
        for row, i in enumerate(chunk):
            length = len(prompt_ids[i])
            scores = norms[row, :length] / norms[row, :length].sum()
            last[i] = scores[-1]
            if members[i]:
                profession[i] = scores[members[i]].sum()
            target[i] = tok.decode([int(top[row])])
    columns = {"model": [backend.model_id] * n, "n_tokens": [len(p) for p in prompt_ids], "target_token": target,
               "n_profession_tokens": [len(m) for m in members], "profession_saliency": profession,
               "last_saliency": last}
    return _add_columns(table, columns, where)


# --- public: perturbations ----------------------------------------------------------------

_INDEFINITE_BEFORE = re.compile(r"(?<!\w)(a|an)(\s+)(?=\{profession\})", flags=re.IGNORECASE)


def _agree(article: str) -> str:
    """The article to use before "person": a/an becomes a (keeping its capital); others stay."""
    if article.lower() in ("a", "an"):
        return "A" if article[0].isupper() else "a"
    return article


def perturb(template: str, profession: str, article: str | None = None) -> dict[str, str]:
    """The Orig, Replace and Delete prompts of one template and profession.

    Parameters
    ----------
    template : str
        A prompt with a ``{profession}`` placeholder and optionally an ``{article}`` one:
        ``"The {profession} said that"`` (Vig et al.) or ``"{article} {profession} is a person
        who ... where"`` (the natural-sentence prompts).
    profession : str
        The profession, as it should appear in the prompt (``"adjunct professor"``).
    article : str, optional
        Fills ``{article}``; required when the template has that placeholder, otherwise unused.

    Returns
    -------
    dict
        ``{"orig": ..., "replace": ..., "delete": ...}``:

        ``orig``
            The template filled in as given.
        ``replace``
            ``profession`` replaced by ``"person"``; an indefinite article before it (from
            ``{article}`` or written in the template) becomes ``"a"``/``"A"`` to agree with
            "person", while "The"/"the" stays.
        ``delete``
            The profession removed together with one adjoining space, the article kept as is
            (the paper's "The _ said that" is "The said that").

    Raises
    ------
    InputError
        The template has no ``{profession}`` placeholder, or has ``{article}`` and no article.

    Examples
    --------
    >>> perturb("The {profession} said that", "metalsmith")
    {'orig': 'The metalsmith said that', 'replace': 'The person said that', 'delete': 'The said that'}
    >>> perturb("{article} {profession} is a person who crafts objects from silver where", "accountant", "An")["replace"]
    'A person is a person who crafts objects from silver where'
    >>> perturb("{article} {profession} studies cultures where", "anthropologist", "An")["delete"]
    'An studies cultures where'
    """
    if "{profession}" not in template:
        raise InputError(NO_PROFESSION_PLACEHOLDER.format(template=template))
    if "{article}" in template and article is None:
        raise InputError(NO_ARTICLE.format(template=template))

    def fill(text: str, art: str | None, word: str) -> str:
        text = text.replace("{article}", art if art is not None else "")
        return text.replace("{profession}", word)

    replaced = _INDEFINITE_BEFORE.sub(lambda m: _agree(m.group(1)) + m.group(2), template)
    deleted = re.sub(r" ?\{profession\}", "", template, count=0)
    if deleted.startswith(" ") and not template.startswith(" "):
        deleted = deleted[1:]
    return {
        "orig": fill(template, article, profession),
        "replace": fill(replaced, _agree(article) if article is not None else None, "person"),
        "delete": fill(deleted, article, ""),
    }


def perturbations(table: pd.DataFrame, *, template: str = "template", profession: str = "profession",
                  article: str | None = "article") -> pd.DataFrame:
    """Every row of a template table as its three perturbed prompts, in long format.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per (template, profession), with ``template`` and ``profession`` columns and,
        when any template uses ``{article}``, an ``article`` column (e.g. the natural-sentences
        CSV).  Set ``article=None`` for tables without one.
    template, profession, article : str
        The names of those columns.

    Returns
    -------
    pandas.DataFrame
        Three rows per input row (orig, replace, delete), with every input column, then
        ``perturbation``, ``prompt`` and ``word`` (the word to pass to :func:`saliency`: the
        profession, ``"person"``, or None for delete).  ``source_row`` is the input's index.

    Examples
    --------
    >>> rows = pd.DataFrame({"template": ["The {profession} said that"], "profession": ["nurse"]})
    >>> perturbations(rows, article=None)[["perturbation", "prompt", "word"]].values.tolist()
    [['orig', 'The nurse said that', 'nurse'], ['replace', 'The person said that', 'person'], ['delete', 'The said that', None]]
    """
    for name in (template, profession) + ((article,) if article else ()):
        if name not in table.columns:
            raise InputError(f"perturbations: column {name!r} missing from table; got "
                             f"{', '.join(map(str, table.columns))}")
    for name in ("source_row", "perturbation", "prompt", "word"):
        if name in table.columns:
            raise InputError(COLUMN_CLASH.format(where="perturbations", name=name))
    records = []
    for index, row in table.iterrows():
        art = row[article] if article else None
        art = None if _missing(art) else str(art)
        prompts = perturb(str(row[template]), str(row[profession]), art)
        words = {"orig": str(row[profession]), "replace": "person", "delete": None}
        for kind in PERTURBATIONS:
            records.append({**row.to_dict(), "source_row": index, "perturbation": kind,
                            "prompt": prompts[kind], "word": words[kind]})
    columns = list(table.columns) + ["source_row", "perturbation", "prompt", "word"]
    out = pd.DataFrame.from_records(records, columns=columns)
    out["word"] = pd.Series([r["word"] for r in records], index=out.index, dtype=object)  # None stays None
    return out


def expand_templates(templates: pd.DataFrame, professions: Sequence[str], *, template: str = "template",
                     perturbed: bool = False) -> pd.DataFrame:
    """Every template crossed with every profession (e.g. Vig et al.'s 17 templates × a profession list).

    Parameters
    ----------
    templates : pandas.DataFrame
        One row per template with a ``template`` column using ``{profession}`` (other columns
        such as ``id`` and ``continuation`` are kept), e.g. ``vig2020-templates.csv``.
    professions : sequence of str
        Professions as they should appear in prompts (use spaces, not underscores).
    template : str, default="template"
        The column holding the templates.
    perturbed : bool, default=False
        Also make the Replace and Delete prompts (:func:`perturbations`).

    Returns
    -------
    pandas.DataFrame
        One row per (template, profession): the template's columns, then ``profession`` and
        ``prompt`` (the Orig prompt).  With ``perturbed=True``, three rows per (template,
        profession) as :func:`perturbations` makes them (``source_row``, ``perturbation``,
        ``prompt``, ``word``).

    Examples
    --------
    >>> t = pd.DataFrame({"id": ["said_that"], "template": ["The {profession} said that"]})
    >>> expand_templates(t, ["nurse", "fire fighter"])["prompt"].tolist()
    ['The nurse said that', 'The fire fighter said that']
    >>> expand_templates(t, ["nurse"], perturbed=True)["prompt"].tolist()
    ['The nurse said that', 'The person said that', 'The said that']
    """
    if template not in templates.columns:
        raise InputError(f"expand_templates: column {template!r} missing from templates; got "
                         f"{', '.join(map(str, templates.columns))}")
    if isinstance(professions, str):
        raise InputError("expand_templates: professions must be a sequence of strings, not one string")
    records = [{**row.to_dict(), "profession": job} for _, row in templates.iterrows() for job in professions]
    grid = pd.DataFrame.from_records(records, columns=list(templates.columns) + ["profession"])
    if perturbed:
        article = "article" if "article" in grid.columns else None
        return perturbations(grid, template=template, article=article)
    return _add_columns(grid, {"prompt": [perturb(str(t), str(j))["orig"]
                                          for t, j in zip(grid[template], grid["profession"])]},
                        "expand_templates")
