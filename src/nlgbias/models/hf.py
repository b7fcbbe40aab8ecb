"""Transformers backend: a hub id, a local model folder, or a GGUF file.

Sampling is our own loop over the model's forward pass (with its KV cache) rather than
``model.generate``: each row draws its tokens from its own pre-computed uniforms (seeded per
sample), so a sample's random draws do not depend on which other prompts share its batch, the
batch size, or whether the run was interrupted (its text can, rarely, through rounding: below).
Rows are left-padded; position ids follow the attention mask, as in ``generate``.

Log-probabilities are always computed in float32, with right padding.  Sampling runs in
float32 by default.  The logits' rounding can depend on the batch's shape (on a GPU the matrix
kernels change with it), and rarely that tips a near-tie between two tokens: 8 of 6,000 texts
differed between batch 120 and 1,000 in float32 on an H100.  ``dtype="bfloat16"`` samples from a
bfloat16 copy of the model, about 1.7x faster on CPUs with native bfloat16 (slower than float32
on an H100 for the default model, see docs/benchmarks.md); its texts depend on the batch's shape
more often.  Texts are reproducible for the same ``--batch-size`` in either dtype (the run store
regenerates whole batches on resume), which is why the run id includes it.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import inspect
import os
import shutil
import socket
import tempfile
from pathlib import Path
from typing import Any, Sequence
from urllib.parse import urlparse

import numpy as np

from nlgbias.errors import BackendError, option
from nlgbias.models.backend import GenerationRequest
from nlgbias.models.embedded import EMBEDDED
from nlgbias.sampling import SamplingParams

DTYPES = ("float32", "bfloat16", "float16")
STOP_TOKENS = ("<|endoftext|>", "</s>", "<eos>", "<end_of_turn>", "<|im_end|>", "<|eot_id|>")
HUB_UNREACHABLE = ("model {spec}: looks like a Hugging Face hub id, but no model hub is reachable "
                   "and it is not in the local cache; use a local folder or GGUF file, or an embedded "
                   "model: {aliases}")


def file_sha256(path: str | Path, *, chunk: int = 1 << 20) -> str:
    """SHA-256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while block := handle.read(chunk):
            digest.update(block)
    return digest.hexdigest()


def folder_sha256(folder: Path) -> str:
    """One SHA-256 over the weight files of a model folder (name + content, sorted by name)."""
    digest = hashlib.sha256()
    files = sorted(p for p in folder.iterdir()
                   if p.is_file() and p.suffix in (".safetensors", ".bin", ".gguf", ".pt", ".pth"))
    for path in files:
        digest.update(path.name.encode())
        digest.update(bytes.fromhex(file_sha256(path)))
    return digest.hexdigest()


def quiet_transformers() -> None:
    """Turn off transformers' own progress bars ("Loading weights"): nlgbias reports progress itself,
    and a stray bar would break the one-line error promise."""
    from transformers.utils import logging

    logging.disable_progress_bar()


@contextlib.contextmanager
def no_library_bars():
    """Silence the bar transformers draws with plain tqdm while converting GGUF tensors.

    That loop ignores transformers' ``disable_progress_bar`` switch, and tqdm reads its
    ``TQDM_DISABLE`` variable only at import, so the module's ``tqdm`` is swapped for a disabled
    one inside the block and put back after it: nlgbias's own bars keep the one style.
    """
    try:
        import transformers.modeling_gguf_pytorch_utils as gguf_utils
    except ImportError:  # a transformers without GGUF support: nothing to silence
        yield
        return
    original = getattr(gguf_utils, "tqdm", None)
    if original is not None:
        gguf_utils.tqdm = functools.partial(original, disable=True)
    try:
        yield
    finally:
        if original is not None:
            gguf_utils.tqdm = original


def hub_reachable(timeout: float = 3.0) -> bool:
    """Whether the Hugging Face hub (or ``HF_ENDPOINT``) answers a TCP connect quickly."""
    if os.environ.get("HF_HUB_OFFLINE", "0") not in ("", "0", "false", "False"):
        return False
    url = urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co"))
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname, port), timeout=timeout):
            return True
    except OSError:
        return False


class HFBackend:
    """A causal language model loaded with transformers.

    Parameters
    ----------
    source : str
        A local model folder, a ``.gguf`` file, or a hub id.
    model_id : str, optional
        Name recorded in outputs and used in sample seeds (default: ``source``).
    dtype : {"float32", "bfloat16", "float16"}, default="float32"
        Sampling dtype.  Log-probabilities always use float32.
    device : str, default="auto"
        ``cpu``, ``cuda``, ``cuda:1`` ...; ``auto`` picks CUDA when available.
    info : dict, optional
        Extra manifest fields (e.g. the embedded package a file came from).
    """

    def __init__(self, source: str, *, model_id: str | None = None, dtype: str = "float32",
                 device: str = "auto", info: dict[str, Any] | None = None,
                 revision: str | None = None) -> None:
        import torch

        if dtype not in DTYPES:
            raise BackendError(f"{option('--dtype', dtype)}: unknown; use one of {', '.join(DTYPES)}")
        self.torch = torch
        self.model_id = model_id or source
        self.device = torch.device(("cuda" if torch.cuda.is_available() else "cpu") if device == "auto" else device)
        self.tokenizer, self.model, weights = _load(source, revision=revision)
        self.model.to(self.device).eval()
        self.sample_dtype = getattr(torch, dtype)
        self._sampler = None  # a low-precision copy, made on first use
        # pick(logits, seeds, step, params) -> token ids, instead of pick_tokens: an experiment's own sampler
        # (scripts/coupling.py's Gumbel-max picking, for scripts/pairing_experiment.py); None in every run
        self.token_picker = None
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.stop_ids = _stop_ids(self.tokenizer, self.model)
        forward_params = inspect.signature(self.model.forward).parameters
        self._cache_kwarg = "cache" if "cache" in forward_params else "past_key_values"
        self._last_only = {"logits_to_keep": 1} if "logits_to_keep" in forward_params else {}
        self.info = {
            "backend": "transformers",
            "source": source,
            **weights,
            "architecture": type(self.model).__name__,
            "sample_dtype": str(self.sample_dtype).replace("torch.", ""),
            "logprob_dtype": "float32",
            "device": str(self.device),
            **(info or {}),
        }

    # -- sampling ---------------------------------------------------------------------------

    def _sampling_model(self):
        if self.sample_dtype == self.torch.float32:
            return self.model
        if self._sampler is None:
            self._sampler = copy.deepcopy(self.model).to(self.sample_dtype).eval()
        return self._sampler

    def generate(self, requests: Sequence[GenerationRequest]) -> list[str]:
        """Sample one continuation per request; see :class:`~nlgbias.models.backend.Backend`."""
        out: list[str] = [""] * len(requests)
        by_params: dict[SamplingParams, list[int]] = {}
        for i, request in enumerate(requests):
            by_params.setdefault(request.params, []).append(i)
        for params, indices in by_params.items():
            texts = self._sample([requests[i].prompt for i in indices], [requests[i].seed for i in indices], params)
            for i, text in zip(indices, texts):
                out[i] = text
        return out

    def _sample(self, prompts: list[str], seeds: list[int], params: SamplingParams) -> list[str]:
        torch = self.torch
        model = self._sampling_model()
        tok = self.tokenizer
        enc = tok(prompts, return_tensors="pt", padding=True, padding_side="left")
        ids = enc["input_ids"].to(self.device)
        mask = enc["attention_mask"].to(self.device)
        batch, steps = ids.shape[0], params.max_new_tokens
        uniforms = torch.tensor(np.stack([np.random.default_rng(s).random(steps) for s in seeds]),
                                dtype=torch.float64, device=self.device)
        positions = (mask.cumsum(-1) - 1).clamp(min=0)
        stop = torch.tensor(sorted(self.stop_ids), device=self.device)
        finished = torch.zeros(batch, dtype=torch.bool, device=self.device)
        chosen = []
        from transformers import DynamicCache

        cache = {self._cache_kwarg: DynamicCache()}  # "cache" in transformers >= 5.x, else "past_key_values"
        with torch.inference_mode():
            logits = model(input_ids=ids, attention_mask=mask, position_ids=positions, use_cache=True,
                           **self._last_only, **cache).logits[:, -1, :]
            for step in range(steps):
                if self.token_picker is not None:
                    token = self.token_picker(logits.float(), seeds, step, params)
                else:
                    token = pick_tokens(logits.float(), uniforms[:, step], params)
                token = torch.where(finished, torch.full_like(token, tok.pad_token_id), token)
                chosen.append(token)
                finished |= torch.isin(token, stop)
                if bool(finished.all()) or step == steps - 1:
                    break
                mask = torch.cat([mask, mask.new_ones(batch, 1)], dim=1)
                positions = positions[:, -1:] + 1
                logits = model(input_ids=token[:, None], attention_mask=mask, position_ids=positions,
                               use_cache=True, **cache).logits[:, -1, :]
        new = torch.stack(chosen, dim=1).cpu().tolist()
        texts = []
        prompt_rows = [[t for t, m in zip(row, keep) if m]
                       for row, keep in zip(enc["input_ids"].tolist(), enc["attention_mask"].tolist())]
        for row, prompt_ids in zip(new, prompt_rows):
            kept = []
            for t in row:
                if t in self.stop_ids:
                    break
                kept.append(t)
            texts.append(self._decode_continuation(prompt_ids, kept))
        return texts

    def _decode_continuation(self, prompt_ids: list[int], new_ids: list[int]) -> str:
        """Decode new tokens in the context of the prompt, so leading spaces survive."""
        tok = self.tokenizer
        prefix = tok.decode(prompt_ids, skip_special_tokens=True)
        full = tok.decode(prompt_ids + new_ids, skip_special_tokens=True)
        if full.startswith(prefix):
            return full[len(prefix):]
        return tok.decode(new_ids, skip_special_tokens=True)

    # -- log-probabilities -------------------------------------------------------------------

    def next_token_logprobs(self, contexts: Sequence[str], targets: Sequence[str], *,
                            batch_size: int = 32) -> list[float]:
        """Log P(target | context) by the chain rule over the target's tokens, in float32."""
        torch = self.torch
        if len(contexts) != len(targets):
            raise ValueError(f"contexts and targets differ in length: {len(contexts)} vs {len(targets)}")
        tok = self.tokenizer
        pairs = []
        for context, target in zip(contexts, targets):
            context_ids = tok(context)["input_ids"] if context else []
            if not context_ids:
                if tok.bos_token_id is None:
                    raise BackendError(f"model {self.model_id}: has no start token, so an empty context cannot be scored")
                context_ids = [tok.bos_token_id]
            target_ids = tok(target, add_special_tokens=False)["input_ids"]
            if not target_ids:
                raise BackendError(f"target {target!r}: tokenizes to nothing for model {self.model_id}")
            pairs.append((context_ids, target_ids))
        limit = getattr(self.model.config, "max_position_embeddings", None)
        out = [0.0] * len(pairs)
        order = sorted(range(len(pairs)), key=lambda i: len(pairs[i][0]) + len(pairs[i][1]))
        for start in range(0, len(order), batch_size):
            chunk = order[start:start + batch_size]
            seqs = [pairs[i][0] + pairs[i][1] for i in chunk]
            width = max(len(s) for s in seqs)
            if limit and width > limit:
                raise BackendError(f"model {self.model_id}: a prompt of {width} tokens exceeds its context of {limit}")
            ids = torch.full((len(seqs), width), tok.pad_token_id, dtype=torch.long)
            mask = torch.zeros((len(seqs), width), dtype=torch.long)
            for row, seq in enumerate(seqs):
                ids[row, :len(seq)] = torch.tensor(seq)
                mask[row, :len(seq)] = 1
            with torch.inference_mode():
                logits = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device)).logits
                logp = torch.log_softmax(logits.float(), dim=-1)
            for row, i in enumerate(chunk):
                n_ctx, target_ids = len(pairs[i][0]), pairs[i][1]
                positions = torch.arange(n_ctx - 1, n_ctx - 1 + len(target_ids), device=logp.device)
                picked = logp[row, positions, torch.tensor(target_ids, device=logp.device)]
                out[i] = float(picked.double().sum())
        return out

    def close(self) -> None:
        self._sampler = None


def pick_tokens(logits, uniforms, params: SamplingParams):
    """Choose one token per row from ``logits`` using that row's uniform draw in [0, 1).

    Temperature scales the logits; top-k keeps the k largest; top-p keeps the smallest
    prefix of the sorted distribution whose mass reaches p.  The token is found by inverting
    the cumulative distribution at the row's uniform, so a row's choice depends only on its
    own logits and its own draw.  ``temperature == 0`` is greedy.
    """
    import torch

    if params.temperature == 0:
        return logits.argmax(dim=-1)
    k = params.top_k if 0 < params.top_k < logits.shape[-1] else logits.shape[-1]
    values, indices = torch.topk(logits / params.temperature, k, dim=-1, sorted=True)
    probs = torch.softmax(values.double(), dim=-1)
    if params.top_p < 1.0:
        before = probs.cumsum(dim=-1) - probs  # mass of the better-ranked tokens
        probs = torch.where(before < params.top_p, probs, torch.zeros_like(probs))
    cdf = probs.cumsum(dim=-1)
    target = (uniforms * cdf[:, -1]).unsqueeze(-1)
    choice = (cdf <= target).sum(dim=-1).clamp(max=k - 1)
    return indices.gather(-1, choice.unsqueeze(-1)).squeeze(-1)


def _stop_ids(tokenizer, model) -> set[int]:
    ids: set[int] = set()
    if tokenizer.eos_token_id is not None:
        ids.add(int(tokenizer.eos_token_id))
    configured = getattr(model.generation_config, "eos_token_id", None)
    if isinstance(configured, int):
        ids.add(configured)
    elif configured:
        ids.update(int(i) for i in configured)
    vocab = tokenizer.get_vocab()
    ids.update(vocab[t] for t in STOP_TOKENS if t in vocab)
    return ids


def _load(source: str, *, revision: str | None):
    """(tokenizer, float32 model, weight facts) for a GGUF file, a folder or a hub id."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    quiet_transformers()

    path = Path(source).expanduser()
    if path.suffix == ".gguf":
        if not path.is_file():
            raise BackendError(f"model {source}: GGUF file not found")
        return _load_gguf(path)
    if path.is_dir():
        try:
            tokenizer = AutoTokenizer.from_pretrained(path)
            model = AutoModelForCausalLM.from_pretrained(path, dtype="float32")
        except (OSError, ValueError) as exc:
            raise BackendError(f"model {source}: cannot load this folder with transformers ({_first_line(exc)})") from None
        return tokenizer, model, {"weights_sha256": folder_sha256(path)}
    if path.exists():
        raise BackendError(f"model {source}: not a model folder or a .gguf file")
    return _load_hub(source, revision=revision)


def _load_gguf(path: Path):
    """Load a GGUF file, caching the de-quantized model as safetensors for fast reloads."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    digest = file_sha256(path)
    facts = {"weights_file": path.name, "weights_sha256": digest}
    cache = gguf_cache(digest)
    if (cache / "config.json").is_file():
        try:
            return (AutoTokenizer.from_pretrained(cache),
                    AutoModelForCausalLM.from_pretrained(cache, dtype="float32"), facts)
        except (OSError, ValueError):
            pass  # a damaged cache: rebuild it below
    try:
        with no_library_bars():  # "Converting and de-quantizing GGUF tensors", drawn with plain tqdm
            tokenizer = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
            model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype="float32")
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise BackendError(f"model {path}: cannot load this GGUF file with transformers ({_first_line(exc)})") from None
    _save_cache(cache, tokenizer, model)
    return tokenizer, model, facts


def _save_cache(cache: Path, tokenizer, model) -> None:
    """Write the converted model atomically (a temp folder renamed into place); skip on error."""

    # The weights are already de-quantized to float32; drop the GGUF marker so they can be saved.
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=cache.parent, prefix=".partial-"))
        tokenizer.save_pretrained(tmp)
        model.save_pretrained(tmp)
        try:
            tmp.rename(cache)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)  # another process won the race
    except (OSError, ValueError):
        pass  # the cache only saves time; loading still worked


def gguf_cache(digest: str) -> Path:
    """The folder holding the de-quantized copy of the GGUF file whose SHA-256 is ``digest``."""
    return model_cache_dir() / f"gguf-{digest[:32]}"


def first_load_note(source: str, digest: str, name: str) -> str | None:
    """The line to show before loading a GGUF file that has not been de-quantized yet, or None.

    ``digest`` is the file's SHA-256 (a model reference's fingerprint).  Only a GGUF file whose
    cached copy (``gguf_cache(digest)/config.json``) is missing takes long to load: converting
    the 135M-parameter default took 34 s on this project's 2-core test machine, reading the
    cached copy 0.3 s.
    """
    if Path(source).suffix != ".gguf" or (gguf_cache(digest) / "config.json").is_file():
        return None
    return (f"de-quantizing {name} once (about half a minute; the result is cached in {model_cache_dir()}); "
            "later loads take about 1 s")


def model_cache_dir() -> Path:
    """Where converted models are kept: ``$NLGBIAS_CACHE/models`` or ``~/.cache/nlgbias/models``."""
    root = os.environ.get("NLGBIAS_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "nlgbias")
    return Path(root) / "models"


def _load_hub(source: str, *, revision: str | None):
    from transformers import AutoModelForCausalLM, AutoTokenizer


    def load(local_only: bool):
        kwargs = {"revision": revision, "local_files_only": local_only}
        tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
        model = AutoModelForCausalLM.from_pretrained(source, dtype="float32", **kwargs)
        return tokenizer, model

    try:
        tokenizer, model = load(local_only=True)
    except (OSError, ValueError):
        if not hub_reachable():
            raise BackendError(HUB_UNREACHABLE.format(spec=source, aliases=", ".join(EMBEDDED))) from None
        try:
            tokenizer, model = load(local_only=False)
        except (OSError, ValueError) as exc:
            raise BackendError(f"model {source}: cannot load from the hub ({_first_line(exc)})") from None
    commit = getattr(model.config, "_commit_hash", None)
    return tokenizer, model, {"hub_id": source, "revision": revision or "main", "commit": commit}


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:200] if text else type(exc).__name__
