"""The OpenAI-compatible backend against a local fake server that injects faults."""

from __future__ import annotations

import re
import time

import pytest

from fakeserver import FakeServer
from nlgbias.errors import BackendError
from nlgbias.models import GenerationRequest
from nlgbias.models.openai_http import GiveUp, OpenAIBackend, _retry_after
from nlgbias.sampling import SamplingParams

REQ = GenerationRequest("The man worked as", SamplingParams(), 7)


def backend(url, **kw):
    options = dict(timeout=2.0, max_retries=3, backoff=0.01, max_backoff=0.05)
    options.update(kw)
    return OpenAIBackend("served-model", base_url=url, **options)


def test_retries_500s_then_succeeds():
    with FakeServer([("status", 500), ("status", 502)]) as server:
        client = backend(server.url)
        text = client.generate([REQ])[0]
    assert text.startswith(" a worker number")
    assert client.stats == {"requests": 3, "retries": 2}
    body = server.requests[-1]
    assert (body["model"], body["prompt"], body["max_tokens"], body["temperature"], body["top_k"], body["seed"]) == \
        ("served-model", "The man worked as", 40, 0.7, 40, 7)


def test_honours_retry_after_on_429():
    with FakeServer([("status", 429, "1")]) as server:
        client = backend(server.url)
        start = time.monotonic()
        client.generate([REQ])
        waited = time.monotonic() - start
    assert waited >= 0.95  # Retry-After: 1, although the backoff alone would wait 0.01 s
    assert len(server.requests) == 2


def test_retry_after_parsing():
    assert _retry_after("3") == 3.0
    assert _retry_after("junk") is None
    assert _retry_after("100000") == 300.0
    assert 0 <= _retry_after(time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(time.time() + 5))) <= 6


def test_retries_a_timeout():
    with FakeServer([("sleep", 1.5)]) as server:
        client = backend(server.url, timeout=0.5)
        assert client.generate([REQ])[0].startswith(" a worker")
    assert client.stats["retries"] == 1


def test_gives_up_with_one_clear_error():
    with FakeServer([("status", 503)] * 10) as server:
        with pytest.raises(GiveUp) as caught:
            backend(server.url, max_retries=2).generate([REQ])
    assert str(caught.value) == (f"endpoint {server.url}/completions: gave up after 3 attempts; "
                                 "last error: HTTP 503: injected 503")


def test_refused_connection_gives_up():
    with FakeServer() as server:
        url = server.url
    with pytest.raises(GiveUp, match=r"gave up after 2 attempts; last error: cannot connect \(Connection refused\)"):
        backend(url, max_retries=1).generate([REQ])


def test_a_malformed_body_is_retried_like_a_500():
    with FakeServer([("bad_json",), ("bad_json",)]) as server:
        client = backend(server.url)
        assert client.generate([REQ])[0].startswith(" a worker number")
    assert len(server.requests) == 3 and client.stats["retries"] == 2


def test_malformed_bodies_give_up_naming_the_server():
    with FakeServer([("bad_json",)] * 10) as server:
        with pytest.raises(GiveUp) as caught:
            backend(server.url, max_retries=2).generate([REQ])
    assert re.fullmatch(rf"endpoint {re.escape(server.url)}/completions: gave up after 3 attempts; last error: "
                        r"returned malformed JSON \(JSONDecodeError at byte \d+\)", str(caught.value))
    assert len(server.requests) == 3


def test_client_errors_are_not_retried_and_hint_at_the_key(monkeypatch):
    monkeypatch.setenv("NLGBIAS_TEST_KEY", "wrong")
    with FakeServer([("status", 401)]) as server:
        with pytest.raises(BackendError) as caught:
            backend(server.url, api_key_env="NLGBIAS_TEST_KEY").generate([REQ])
    assert str(caught.value) == (f"endpoint {server.url}/completions: HTTP 401 (check the key in $NLGBIAS_TEST_KEY): "
                                 "injected 401")
    assert len(server.requests) == 1


def test_a_401_says_when_the_key_variable_is_unset(monkeypatch, capsys, tmp_path):
    from nlgbias.cli import main

    monkeypatch.delenv("NLGBIAS_UNSET_KEY", raising=False)
    with FakeServer([("status", 401)]) as server:
        with pytest.raises(BackendError) as caught:
            backend(server.url, api_key_env="NLGBIAS_UNSET_KEY").generate([REQ])
        assert "Authorization" not in server.headers[0]
    assert str(caught.value) == (f"endpoint {server.url}/completions: HTTP 401 ($NLGBIAS_UNSET_KEY is not set, so no "
                                 "key was sent: set it, or name the variable that holds the key with api_key_env=): "
                                 "injected 401")
    with FakeServer([("status", 401)]) as server:
        with pytest.raises(SystemExit):
            main(["run", "--model", f"openai:m@{server.url}", "--api-key-env", "NLGBIAS_UNSET_KEY", "--samples", "1",
                  "--scorer", "vader", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert "HTTP 401 ($NLGBIAS_UNSET_KEY is not set, so no key was sent: set it, or name the variable that holds the " \
           "key with --api-key-env)" in err


def test_a_400_naming_top_k_suggests_top_k_0(capsys, tmp_path):
    from nlgbias.cli import main

    rejection = ("status", 400, None, "Unrecognized request argument supplied: top_k")
    with FakeServer([rejection]) as server:
        with pytest.raises(BackendError) as caught:
            backend(server.url).generate([REQ])
        assert server.requests[0]["top_k"] == REQ.params.top_k
    assert str(caught.value) == (f"endpoint {server.url}/completions: HTTP 400 (the server rejects top_k: rerun with "
                                 "top_k=0, which leaves it out): Unrecognized request argument supplied: top_k")
    with FakeServer([rejection]) as server:
        with pytest.raises(SystemExit):
            main(["run", "--model", f"openai:m@{server.url}", "--samples", "1", "--scorer", "vader",
                  "--concurrency", "1", "--out", str(tmp_path / "run")])
    assert "(the server rejects top_k: rerun with --top-k 0, which leaves it out)" in capsys.readouterr().err
    with FakeServer([("status", 400, None, "max_tokens too large")]) as server:
        with pytest.raises(BackendError) as caught:
            backend(server.url).generate([REQ])
    assert "rejects top_k" not in str(caught.value)


def test_concurrency_is_bounded_and_order_kept():
    reqs = [GenerationRequest(f"Prompt {i} is", SamplingParams(), i) for i in range(12)]
    with FakeServer(delay=0.15) as server:
        client = backend(server.url, concurrency=3)
        texts = client.generate(reqs)
    assert 2 <= server.max_in_flight <= 3
    with FakeServer() as server:
        one_by_one = [backend(server.url).generate([r])[0] for r in reqs]
    assert texts == one_by_one


def test_api_key_goes_only_in_the_header(monkeypatch):
    monkeypatch.setenv("NLGBIAS_TEST_KEY", "sk-test-secret-42")
    with FakeServer() as server:
        client = backend(server.url, api_key_env="NLGBIAS_TEST_KEY")
        client.generate([REQ])
    assert server.headers[0]["Authorization"] == "Bearer sk-test-secret-42"
    assert "sk-test-secret-42" not in repr(client.info)


def test_logprobs_from_echo_and_a_server_without_them():
    with FakeServer() as server:
        value = backend(server.url).next_token_logprobs(["The nurse said that"], [" she was"])[0]
    # tokens: The, nurse, said, that, she, was -> the last two have log-probs -2.0 and -2.5
    assert value == pytest.approx(-4.5)
    with FakeServer(logprobs=False) as server:
        with pytest.raises(BackendError, match="does not return prompt log-probabilities"):
            backend(server.url).next_token_logprobs(["The nurse said that"], [" she"])
