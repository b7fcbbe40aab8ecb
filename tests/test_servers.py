"""Several servers of one model (`--api-base` with several URLs) against fake servers on 127.0.0.1.

tests/fakeserver.py answers a request with a text that depends only on (prompt, seed), so any
server answers a request alike, and a multi-server run can be compared row by row with a
single-server run.  `sheng2019` with 2 samples = 120 requests.  Counted in docs/reliability.md.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

import nlgbias
from fakeserver import FakeServer
from nlgbias.errors import InputError
from nlgbias.models import BackendOptions, GenerationRequest
from nlgbias.models.openai_http import OpenAIBackend
from nlgbias.models.servers import GiveUp, ServerPool, with_earlier_answers
from nlgbias.sampling import SamplingParams
from test_reliability import call, stored

REQUESTS = 120


def servers_run(capsys, urls, out, *extra):
    """`nlgbias run` over ``urls``: one --api-base with commas, plus any extra options."""
    return call(capsys, "run", "sheng2019", "--model", "openai:served", "--api-base", ",".join(urls),
                "--samples", 2, "--scorer", "vader", "--n-boot", 100, "--quiet", "--out", out, *extra)


def answered(*servers: FakeServer) -> list[tuple[str, int]]:
    """(prompt, seed) of every request the servers answered normally, with repeats."""
    return [(b["prompt"], b["seed"]) for server in servers for b in server.answered]


def manifest_servers(out: Path) -> list[dict]:
    (model,) = json.loads((out / "manifest.json").read_text())["models"]
    return model["servers"]


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    """The reference: the same run on one healthy server, whose URL is the first of every list below."""
    out = tmp_path_factory.mktemp("single") / "o"
    server = FakeServer().__enter__()
    result = nlgbias.run("sheng2019", models=["openai:served"], samples=2, scorers=["vader"], n_boot=100, out=out,
                         quiet=True, backend_options=BackendOptions(api_base=server.url))
    assert len(server.answered) == REQUESTS
    yield server, out, result
    server.__exit__()


def assert_same_outputs(out: Path, reference: Path) -> None:
    """Same samples (every column, every row) and the same metrics as the single-server run."""
    pd.testing.assert_frame_equal(pd.read_parquet(out / "samples.parquet"),
                                  pd.read_parquet(reference / "samples.parquet"))
    assert (out / "metrics.json").read_bytes() == (reference / "metrics.json").read_bytes()


def test_a_server_that_fails_mid_run_and_one_that_stops_listening_leave_the_run_to_the_others(single, capsys,
                                                                                               tmp_path):
    first, reference, _ = single
    out = tmp_path / "o"
    with FakeServer([("ok",)] * 10 + [("status", 500)] * 1000, delay=0.01) as failing, \
            FakeServer([("ok",)] * 15 + [("stop",)] * 1000, delay=0.01) as stopping:
        first.answered.clear()
        code, _, err = servers_run(capsys, [first.url, failing.url, stopping.url], out, "--max-retries", "1",
                                   "--concurrency", "3")
        assert code == 0, err
        assert stopping.stopped  # it went away mid-run: later requests were refused
    assert (len(first.answered), len(failing.answered), len(stopping.answered)) == (REQUESTS - 25, 10, 15)
    # every sample once: no request answered twice, none missing, each row what its server sent
    sent = answered(first, failing, stopping)
    assert len(sent) == len(set(sent)) == REQUESTS
    rows = stored(out)
    assert len(rows) == REQUESTS and {(p, s % 2 ** 31) for p, s in rows} == set(sent)
    assert_same_outputs(out, reference)
    assert [(s["url"], s["answered"]) for s in manifest_servers(out)] == [
        (first.url, REQUESTS - 25), (failing.url, 10), (stopping.url, 15)]
    assert [s["taken_out"] for s in manifest_servers(out)][1:] == [1, 1]


def test_every_server_down_stops_with_one_line_keeps_every_answer_and_a_rerun_completes(single, capsys,
                                                                                        tmp_path):
    first, reference, _ = single
    out = tmp_path / "o"
    with FakeServer([("ok",)] * 30 + [("status", 503)] * 1000) as one, \
            FakeServer([("ok",)] * 20 + [("status", 500)] * 1000) as two:
        first.answered.clear()
        first.script[:] = [("status", 503)] * 1000  # the list's first URL keys the samples, as in the reference
        code, _, err = servers_run(capsys, [first.url, one.url, two.url], out, "--max-retries", "0",
                                   "--concurrency", "2")
        assert code == 2
        assert err == ("Error: all 3 servers are down (each failed its retries and has answered nothing since): "
                       f"endpoint {first.url}/completions: gave up after 1 attempts; last error: HTTP 503: injected 503; "
                       f"endpoint {one.url}/completions: gave up after 1 attempts; last error: HTTP 503: injected 503; "
                       f"endpoint {two.url}/completions: gave up after 1 attempts; last error: HTTP 500: injected 500\n")
        assert (len(first.answered), len(one.answered), len(two.answered)) == (0, 30, 20)
        rows = stored(out)
        assert {(p, s % 2 ** 31) for p, s in rows} == set(answered(one, two)) and len(rows) == 50
        for server in (first, one, two):  # the servers recover
            server.script.clear()
        code, _, err = servers_run(capsys, [first.url, one.url, two.url], out)
        assert code == 0, err
    sent = answered(first, one, two)
    assert len(sent) == len(set(sent)) == REQUESTS  # the rerun asked only for the 70 missing samples
    assert len(stored(out)) == REQUESTS
    assert_same_outputs(out, reference)
    counts = {s["url"]: s["answered"] for s in manifest_servers(out)}  # over both invocations
    assert counts == {first.url: len(first.answered), one.url: len(one.answered), two.url: len(two.answered)}


def test_requests_spread_over_healthy_servers_within_the_concurrency_of_each(single, capsys, tmp_path):
    first, reference, _ = single
    out = tmp_path / "o"
    with FakeServer(delay=0.02) as two, FakeServer(delay=0.02) as three:
        first.answered.clear()
        first.delay = 0.02  # three alike servers
        code, _, err = call(capsys, "run", "sheng2019", "--model", "openai:served", "--api-base", first.url,
                            "--api-base", two.url, "--api-base", three.url, "--concurrency", "2", "--samples", 2,
                            "--scorer", "vader", "--n-boot", 100, "--quiet", "--out", out)
        first.delay = 0.0
        assert code == 0, err
    shares = [len(s.answered) for s in (first, two, three)]
    assert sum(shares) == REQUESTS and min(shares) >= 20  # each healthy server answered a fair part
    assert [s.max_in_flight for s in (two, three)] == [2, 2]  # --concurrency is per server
    assert [s["answered"] for s in manifest_servers(out)] == shares
    assert_same_outputs(out, reference)


def test_a_server_back_from_its_cooldown_gets_requests_again():
    requests = [GenerationRequest(f"Prompt {i} was", SamplingParams(), i) for i in range(80)]
    with FakeServer(delay=0.03) as steady, FakeServer([("status", 500)] * 2, delay=0.03) as flaky:
        client = OpenAIBackend("m", base_url=[steady.url, flaky.url], concurrency=1, max_retries=0, timeout=2.0,
                               cooldown=0.3)
        texts = client.generate(requests)
    assert texts == [steady.answer({"prompt": r.prompt, "seed": r.seed})["choices"][0]["text"] for r in requests]
    # its first 500 took it out; 0.3 s later one request (a 500 again) took it out again; then it answered
    assert client.info["servers"][1]["taken_out"] == 2
    assert len(flaky.requests) == len(flaky.answered) + 2 and len(flaky.answered) > 0
    assert len(steady.answered) + len(flaky.answered) == len(requests)
    assert [s["answered"] for s in client.info["servers"]] == [len(steady.answered), len(flaky.answered)]


def test_python_api_takes_a_list_or_commas_and_checks_them(single, tmp_path, monkeypatch):
    first, reference, _ = single
    with FakeServer() as two:
        for k, base in enumerate([[first.url, two.url], f"{first.url}, {two.url}/"]):
            result = nlgbias.run("sheng2019", models=["openai:served"], samples=2, scorers=["vader"], n_boot=100,
                                 out=tmp_path / f"o{k}", quiet=True, backend_options=BackendOptions(api_base=base))
            assert [s["url"] for s in result.manifest["models"][0]["servers"]] == [first.url, two.url]
        monkeypatch.setenv("NLGBIAS_API_BASE", f"{first.url},{two.url}")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-test-secret-42")
        result = nlgbias.run("sheng2019", models=["openai:served"], samples=2, scorers=["vader"], n_boot=100,
                             out=tmp_path / "env", quiet=True)
        assert [s["url"] for s in result.manifest["models"][0]["servers"]] == [first.url, two.url]
    assert_same_outputs(tmp_path / "env", reference)
    assert "sk-test-secret-42" not in (tmp_path / "env" / "manifest.json").read_text()
    assert two.headers[-1]["Authorization"] == "Bearer sk-test-secret-42"
    for bad, words in [([first.url, first.url + "/"], f"api_base: {first.url} is given twice"),
                       (f"{first.url},,{first.url}", "has an empty item"),
                       ([first.url, 8000], "is not a server URL or a list of them"),
                       ([first.url, "localhost:8000"], "api_base: 'localhost:8000' is not a server URL")]:
        with pytest.raises(InputError, match=words):
            nlgbias.run("sheng2019", models=["openai:served"], out=tmp_path / "bad",
                        backend_options=BackendOptions(api_base=bad))
    with pytest.raises(InputError, match="cooldown=-1: must be at least 0 seconds"):
        nlgbias.run("sheng2019", models=["openai:served"], out=tmp_path / "bad",
                    backend_options=BackendOptions(cooldown=-1))
    assert not (tmp_path / "bad").exists()


def test_earlier_answers_add_up_by_server():
    earlier = {"servers": [{"url": "a", "answered": 3, "taken_out": 1}, {"url": "b", "answered": 2, "taken_out": 0}]}
    now = {"model": "m", "servers": [{"url": "b", "answered": 5, "taken_out": 1}, {"url": "c", "answered": 1,
                                                                                  "taken_out": 0}]}
    assert with_earlier_answers(earlier, now) == {"model": "m", "servers": [
        {"url": "a", "answered": 3, "taken_out": 1}, {"url": "b", "answered": 7, "taken_out": 1},
        {"url": "c", "answered": 1, "taken_out": 0}]}
    assert with_earlier_answers(None, now) == now
    assert with_earlier_answers(earlier, {"model": "local"}) == {"model": "local"}


def test_a_server_back_from_its_cooldown_takes_one_request_until_one_is_answered():
    """The pool alone, with a function in place of HTTP: server b fails its first three requests (all
    sent at once), then answers one slowly, then the rest quickly."""
    lock = threading.Lock()
    calls: list[dict] = []  # server b's calls: start and end times, in the order they started

    def fn(item, server):
        if server.url == "a":
            time.sleep(0.01)
            return item
        with lock:
            call = {"start": time.monotonic()}
            calls.append(call)
            number = len(calls)
        try:
            if number <= 3:
                raise GiveUp("endpoint b: gave up")
            time.sleep(0.1 if number == 4 else 0.01)
            return item
        finally:
            call["end"] = time.monotonic()

    pool = ServerPool(["a", "b"], concurrency=3, cooldown=0.05)
    results = dict(pair for answers in pool.spread(fn, range(200)) for pair in answers)
    assert results == {i: i for i in range(200)}  # the failed item was answered by another server
    assert len(calls) >= 8
    assert calls[4]["start"] >= calls[3]["end"]  # after the cool-down, one request alone on b
    overlapping = max(sum(c["start"] <= call["start"] < c["end"] for c in calls[4:]) for call in calls[4:])
    assert overlapping == 3  # once it answered, b took `concurrency` requests again
    assert [s["answered"] for s in pool.counts()] == [200 - len(calls) + 3, len(calls) - 3]
    assert pool.counts()[1]["taken_out"] == 1
