"""Backend for OpenAI-compatible completion servers (vLLM, llama.cpp server, Ollama, hosted APIs).

Each sample is one ``POST {base_url}/completions`` with its own ``seed``, so servers that honour
seeds reproduce samples.  Requests run on a bounded thread pool; with several base URLs (copies
of one model, e.g. one vLLM server per GPU) they spread over the servers, and a server that
fails its retries is taken out of rotation for a while (:mod:`nlgbias.models.servers`).
Failures that may pass (HTTP 429, 5xx, timeouts, refused or reset connections) are retried with
exponential backoff, waiting what ``Retry-After`` asks when the server sends it; after
``max_retries`` retries the backend gives up with one clear error that names the endpoint.  A
malformed or non-object JSON body counts as such a failure (a proxy or an overloaded server can
cut a body short), and so does a reply without text (``choices`` missing or empty,
``choices[0].text`` null), which an overloaded server can send with HTTP 200; the manifest counts
those per server (``empty_replies``).  Other HTTP errors (401, 404, ...) fail at once.  With several servers the
backend gives up only when every server is down.

:meth:`OpenAIBackend.answer_groups` hands answers back as they arrive, so a run can store
each one at once: requests are independent, so nothing depends on how they are grouped.

The API key is read from an environment variable (``OPENAI_API_KEY`` unless told otherwise)
and is only ever put in the ``Authorization`` header: never in info, errors or outputs.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import os
import random
import socket
import threading
import time
import urllib.error
import urllib.request
from typing import Any, Callable, Iterator, Sequence

from nlgbias.errors import BackendError, option
from nlgbias.models.backend import GenerationRequest
from nlgbias.models.servers import GiveUp, Server, ServerPool, TakenOut

RETRY_STATUS = {408, 409, 425, 429, 500, 502, 503, 504}
MAX_RETRY_AFTER = 300.0


class OpenAIBackend:
    """A model served behind ``/v1/completions``.

    Parameters
    ----------
    model : str
        The served model name sent as ``model``.
    base_url : str or sequence of str
        E.g. ``http://127.0.0.1:8000/v1`` (vLLM), ``http://127.0.0.1:11434/v1`` (Ollama); several
        URLs: servers of the same model, requests spread over them.
    api_key_env : str, default="OPENAI_API_KEY"
        Name of the environment variable holding the key (unset: no Authorization header).
    concurrency : int, default=8
        Requests in flight at once, per server.
    timeout : float, default=60
        Seconds to wait for one response.
    max_retries : int, default=5
        Retries after the first attempt for 429 / 5xx / timeouts / connection errors.
    backoff : float, default=1.0
        First retry delay in seconds; doubles each retry (with jitter), capped at ``max_backoff``.
    send_top_k : bool, default=True
        Send ``top_k`` (vLLM, llama.cpp and Ollama accept it; OpenAI's hosted API does not:
        set ``--top-k 0`` there).
    cooldown : float, default=60
        Seconds a server that failed its retries stays out of rotation (several servers).
    """

    def __init__(self, model: str, *, base_url: str | Sequence[str], model_id: str | None = None,
                 api_key_env: str = "OPENAI_API_KEY", concurrency: int = 8, timeout: float = 60.0,
                 max_retries: int = 5, backoff: float = 1.0, max_backoff: float = 60.0,
                 send_top_k: bool = True, cooldown: float = 60.0) -> None:
        if concurrency < 1:
            raise BackendError(f"{option('--concurrency', concurrency)}: must be at least 1")
        if max_retries < 0:
            raise BackendError(f"{option('--max-retries', max_retries)}: must be 0 or more")
        if not timeout > 0:
            raise BackendError(f"{option('--timeout', timeout)}: must be more than 0 seconds")
        if not cooldown >= 0:
            raise BackendError(f"{option('--cooldown', cooldown)}: must be 0 or more seconds")
        urls = [base_url] if isinstance(base_url, str) else list(base_url)
        self.model = model
        self.pool = ServerPool([url.rstrip("/") for url in urls], concurrency=concurrency, cooldown=cooldown)
        self.base_url = self.pool.servers[0].url
        self.model_id = model_id or f"openai:{model}"
        self.api_key_env = api_key_env
        self.concurrency = concurrency
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.send_top_k = send_top_k
        self.stats = {"requests": 0, "retries": 0}
        self._empty = {server.url: 0 for server in self.pool.servers}  # replies without text, per server
        self._lock = threading.Lock()
        self._info = {"backend": "openai-http", "base_url": self.base_url, "model": model,
                      "api_key_env": api_key_env, "concurrency": concurrency, "timeout_s": timeout,
                      "max_retries": max_retries, "cooldown_s": cooldown}

    @property
    def info(self) -> dict:
        """What the manifest records: settings, and per server the requests it answered and the
        replies without text it sent (each retried like an HTTP 500; never the key)."""
        with self._lock:
            empty = dict(self._empty)
        return {**self._info, "servers": [{**counts, "empty_replies": empty.get(counts["url"], 0)}
                                          for counts in self.pool.counts()]}

    # -- public interface --------------------------------------------------------------------

    def generate(self, requests: Sequence[GenerationRequest]) -> list[str]:
        """One completion per request, in order; see :class:`~nlgbias.models.backend.Backend`."""
        return self._ordered(self._complete, list(requests))

    def answer_groups(self, requests: Sequence[GenerationRequest]) -> Iterator[list[tuple[int, str]]]:
        """Yield ``[(request index, text), ...]`` as answers arrive (all that arrived together).

        With ``concurrency`` requests in flight per server.  A request whose server fails its
        retries is sent again to another server; when every server is down, or one request fails
        for good (HTTP 401, 404, ...), no new request starts, the ones in flight finish (their
        answers are still yielded), and then the error is raised: an answered request is never
        thrown away.
        """
        return self.pool.spread(self._complete, requests)

    def next_token_logprobs(self, contexts: Sequence[str], targets: Sequence[str]) -> list[float]:
        """Log P(target | context) from the server's prompt log-probabilities (``echo``)."""
        if len(contexts) != len(targets):
            raise ValueError(f"contexts and targets differ in length: {len(contexts)} vs {len(targets)}")
        return self._ordered(lambda pair, server: self._prompt_logprob(pair[0], pair[1], server),
                             list(zip(contexts, targets)))

    def close(self) -> None:
        pass

    # -- one request -------------------------------------------------------------------------

    def _complete(self, request: GenerationRequest, server: Server) -> str:
        params = request.params
        body: dict[str, Any] = {
            "model": self.model, "prompt": request.prompt, "max_tokens": params.max_new_tokens,
            "temperature": params.temperature, "top_p": params.top_p, "n": 1,
            "seed": request.seed % (2 ** 31),
        }
        if self.send_top_k and params.top_k > 0:
            body["top_k"] = params.top_k
        return self._post("/completions", body, server, extract=completion_text)

    def _prompt_logprob(self, context: str, target: str, server: Server) -> float:
        if not target:
            raise BackendError("target '': an empty continuation cannot be scored")
        body = {"model": self.model, "prompt": context + target, "max_tokens": 1, "temperature": 0,
                "echo": True, "logprobs": 1}
        reply = self._post("/completions", body, server)
        try:
            logprobs = reply["choices"][0]["logprobs"]
            tokens, values, offsets = logprobs["tokens"], logprobs["token_logprobs"], logprobs["text_offset"]
        except (KeyError, IndexError, TypeError):
            raise BackendError(f"endpoint {server.url}: does not return prompt log-probabilities "
                               f"(echo + logprobs); this probe needs a server that does, e.g. vLLM") from None
        start, end = len(context), len(context) + len(target)
        total, used = 0.0, 0
        for token, value, offset in zip(tokens, values, offsets):
            if start <= offset < end:
                if value is None:
                    raise BackendError(f"endpoint {server.url}: returned no log-probability for {token!r}")
                total += float(value)
                used += 1
        if used == 0:
            raise BackendError(f"target {target!r}: the server's tokens do not cover it")
        return total

    def _post(self, path: str, body: dict, server: Server,
              extract: Callable[[dict], tuple[Any, str]] | None = None) -> Any:
        """POST JSON to ``server`` with retries; returns the decoded reply (or ``extract(reply)``'s
        value) or raises BackendError.

        ``extract(reply)`` gives ``(value, "")``, or ``(None, why)`` for a reply without what was
        asked for: such a reply is retried like an HTTP 500 and counted in ``empty_replies``.
        Stops retrying (:class:`TakenOut`) once the server is taken out of rotation meanwhile.
        """
        url = server.url + path
        data = json.dumps(body).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        key = os.environ.get(self.api_key_env, "")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        last = ""
        for attempt in range(self.max_retries + 1):
            if attempt and server.out.is_set():
                break
            with self._lock:
                self.stats["requests"] += 1
                if attempt:
                    self.stats["retries"] += 1
            delay = None
            try:
                with urllib.request.urlopen(urllib.request.Request(url, data=data, headers=headers),
                                            timeout=self.timeout) as response:
                    raw = response.read()
            except urllib.error.HTTPError as exc:
                detail = _error_detail(exc)
                if exc.code not in RETRY_STATUS:
                    hint = self._hint(exc.code, detail, body, key_sent=bool(key))
                    raise BackendError(f"endpoint {url}: HTTP {exc.code}{hint}: {detail}") from None
                last = f"HTTP {exc.code}: {detail}"
                delay = _retry_after(exc.headers.get("Retry-After"))
            except (TimeoutError, socket.timeout):
                last = f"no reply within {self.timeout:g} s"
            except urllib.error.URLError as exc:
                reason = exc.reason
                if isinstance(reason, (TimeoutError, socket.timeout)):
                    last = f"no reply within {self.timeout:g} s"
                else:
                    last = f"cannot connect ({getattr(reason, 'strerror', None) or reason})"
            except (ConnectionError, http_client_errors()) as exc:
                last = f"connection failed ({type(exc).__name__})"
            else:
                try:
                    reply = json.loads(raw.decode("utf-8"))
                except (UnicodeDecodeError, json.JSONDecodeError) as exc:
                    last = (f"returned malformed JSON ({exc.__class__.__name__} at byte "
                            f"{getattr(exc, 'pos', getattr(exc, 'start', '?'))})")
                else:
                    if not isinstance(reply, dict):
                        last = "returned JSON that is not an object"
                    elif extract is None:
                        return reply
                    else:
                        value, why = extract(reply)
                        if not why:
                            return value
                        last = why
                        with self._lock:
                            self._empty[server.url] = self._empty.get(server.url, 0) + 1
            if attempt == self.max_retries:
                break
            if delay is None:
                delay = min(self.max_backoff, self.backoff * 2 ** attempt) * (0.5 + random.random() / 2)
            server.out.wait(delay)  # wakes at once when the server is taken out
        if server.out.is_set():
            raise TakenOut(f"endpoint {url}: taken out of rotation; last error: {last}")
        raise GiveUp(f"endpoint {url}: gave up after {self.max_retries + 1} attempts; last error: {last}")

    def _hint(self, code: int, detail: str, body: dict, *, key_sent: bool) -> str:
        """What to do about a client error: an unset key variable, or a ``top_k`` the server rejects."""
        if code in (401, 403):
            if not key_sent:
                return (f" (${self.api_key_env} is not set, so no key was sent: set it, or name the variable that "
                        f"holds the key with {option('--api-key-env')})")
            return f" (check the key in ${self.api_key_env})"
        if code in (400, 422) and "top_k" in body and "top_k" in detail:
            return f" (the server rejects top_k: rerun with {option('--top-k', 0)}, which leaves it out)"
        return ""

    def _ordered(self, fn: Callable, items: list) -> list:
        """``fn(item, server)`` for every item, spread over the servers; results in item order."""
        results: list = [None] * len(items)
        for answers in self.pool.spread(fn, items):
            for index, value in answers:
                results[index] = value
        return results


def completion_text(reply: dict) -> tuple[str | None, str]:
    """``(choices[0].text, "")`` of a completion reply, or ``(None, why)`` when it holds no text.

    >>> completion_text({"choices": [{"text": " was kind"}]})
    (' was kind', '')
    >>> completion_text({"choices": []})
    (None, 'returned no text (choices is empty)')
    """
    choices = reply.get("choices")
    if "choices" not in reply:
        return None, "returned no text (no choices)"
    if not isinstance(choices, list) or not choices:
        return None, f"returned no text (choices is {'empty' if choices == [] else 'null' if choices is None else 'not a list'})"
    text = choices[0].get("text") if isinstance(choices[0], dict) else None
    if not isinstance(text, str):
        return None, f"returned no text (choices[0].text is {'null' if text is None else type(text).__name__})"
    return text, ""


def http_client_errors():

    return http.client.HTTPException


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header (seconds or an HTTP date), capped."""
    if not value:
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    return max(0.0, min(MAX_RETRY_AFTER, seconds))


def _error_detail(exc: urllib.error.HTTPError) -> str:
    try:
        body = exc.read().decode("utf-8", "replace")
    except Exception:  # the body is a courtesy; never fail on it
        body = ""
    try:
        message = json.loads(body)["error"]
        message = message.get("message", message) if isinstance(message, dict) else message
    except (ValueError, KeyError, TypeError):
        message = body
    text = " ".join(str(message).split())[:200]
    return text or exc.reason or "no detail"
