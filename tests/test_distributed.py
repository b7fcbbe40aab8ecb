"""Runs on a real local Ray cluster (two 1-CPU actors): the same samples and metrics as one process,
crashed and killed workers, a killed driver, and the one-line errors of ``--ray``.

One cluster (``ray.init(num_cpus=2)``) serves the whole module; deselect with ``-m "not ray"``.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pandas as pd
import pytest

import nlgbias
from nlgbias.cli import main
from nlgbias.pipeline.distributed import FAULT_ENV, RayOptions
from test_store import comparable, count_rows, run_cli

pytestmark = pytest.mark.ray

TINY = dict(samples=2, batch_size=4, max_new_tokens=12, scorers=["vader"], n_boot=200, quiet=True)  # 120 samples
TINY_ARGS = ["--samples", "2", "--batch-size", "4", "--max-new-tokens", "12", "--scorer", "vader", "--n-boot", "200",
             "--quiet"]


@pytest.fixture(scope="module")
def cluster():
    """A local Ray instance with 2 CPUs; its GCS address for other drivers."""
    import ray
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # the in-process baselines, like the 1-CPU actors, on one thread
    context = ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield context.address_info["gcs_address"]
    ray.shutdown()
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def single(cluster, tiny_model_dir, tmp_path_factory):  # noqa: ARG001 (cluster: one torch thread, as on the actors)
    """The tiny model's run in this process, without Ray: what every Ray run must reproduce."""
    out = tmp_path_factory.mktemp("single")
    nlgbias.run("sheng2019", models=[str(tiny_model_dir)], out=out, **TINY)
    return out


def same_outputs(out, reference):
    """Samples (every column, every row), metrics and manifest equal, except this invocation's facts."""
    (s1, m1, f1), (s2, m2, f2) = comparable(out), comparable(reference)
    f1.pop("execution", None)
    f2.pop("execution", None)
    pd.testing.assert_frame_equal(s1, s2)
    assert m1 == m2
    assert f1 == f2
    assert s1["generation_id"].is_unique


def test_two_actors_write_the_same_samples_and_metrics_as_one_process(single, tiny_model_dir, tmp_path):
    result = nlgbias.run("sheng2019", models=[str(tiny_model_dir)], out=tmp_path, ray=RayOptions(workers=2), **TINY)
    assert result.generated == 120 and len(result.samples) == 120
    assert result.manifest["execution"]["ray"] == {"address": "local", "workers": 2, "worker_cpus": 1.0,
                                                   "worker_gpus": 0.0, "retries": 3, "replaced_workers": 0,
                                                   "retried_calls": 0}
    assert count_rows(tmp_path / "store.sqlite") == 120
    same_outputs(tmp_path, single)
    assert (tmp_path / "samples.parquet").read_bytes() == (single / "samples.parquet").read_bytes()


@pytest.mark.usefixtures("cluster")
def test_the_embedded_smollm2_on_two_actors_equals_one_process(tmp_path):
    options = dict(models=["smollm2-135m"], samples=1, batch_size=30, max_new_tokens=8, scorers=["vader"],
                   n_boot=200, quiet=True)
    nlgbias.run("sheng2019", out=tmp_path / "single", **options)
    result = nlgbias.run("sheng2019", out=tmp_path / "ray", ray=RayOptions(workers=2), **options)
    assert result.generated == 60 and result.manifest["execution"]["ray"]["workers"] == 2
    same_outputs(tmp_path / "ray", tmp_path / "single")
    assert (result.samples["continuation"].str.strip() != "").mean() > 0.9  # a real model wrote text


def test_an_actor_killed_mid_run_loses_and_duplicates_nothing(single, tiny_model_dir, tmp_path):
    import ray

    killed = []

    def kill_one_worker():
        deadline = time.monotonic() + 300
        while count_rows(tmp_path / "store.sqlite") < 8 and time.monotonic() < deadline:
            time.sleep(0.02)
        workers = [a for a in ray.util.list_named_actors(all_namespaces=True) if "-generate-" in a["name"]]
        ray.kill(ray.get_actor(workers[0]["name"], namespace=workers[0]["namespace"]), no_restart=True)
        killed.append(count_rows(tmp_path / "store.sqlite"))

    killer = threading.Thread(target=kill_one_worker)
    killer.start()
    result = nlgbias.run("sheng2019", models=[str(tiny_model_dir)], out=tmp_path, ray=RayOptions(workers=2), **TINY)
    killer.join()
    assert killed and killed[0] < 120, "the run finished before a worker could be killed"
    stats = result.manifest["execution"]["ray"]
    assert stats["replaced_workers"] == 1 and 1 <= stats["retried_calls"] <= 2  # its calls in flight
    assert count_rows(tmp_path / "store.sqlite") == 120
    same_outputs(tmp_path, single)


def test_workers_that_crash_are_replaced_and_the_run_completes(single, tiny_model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv(FAULT_ENV, "3")  # both first actors exit (os._exit) at their 3rd batch
    result = nlgbias.run("sheng2019", models=[str(tiny_model_dir)], out=tmp_path, ray=RayOptions(workers=2), **TINY)
    stats = result.manifest["execution"]["ray"]
    assert stats["replaced_workers"] == 2 and 2 <= stats["retried_calls"] <= 4
    same_outputs(tmp_path, single)


def test_workers_that_always_crash_stop_the_run_with_one_line_and_keep_what_is_stored(
        cluster, tiny_model_dir, tmp_path, monkeypatch, capsys):
    nlgbias.run("sheng2019", models=[str(tiny_model_dir)], out=tmp_path, **{**TINY, "samples": 1})  # 60 of 120
    before = count_rows(tmp_path / "store.sqlite")
    assert before == 60
    monkeypatch.setenv(FAULT_ENV, "1:all")  # every actor, replacements too, exits at its first batch
    with pytest.raises(SystemExit) as caught:
        main(["run", "sheng2019", "--model", str(tiny_model_dir), *TINY_ARGS, "--out", str(tmp_path),
              "--ray-address", cluster, "--workers", "1"])  # 4 actors in all: the first and 3 replacements
    err = capsys.readouterr().err
    assert caught.value.code == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: Ray: model {tiny_model_dir}: "), err
    assert "rerun to resume" in lines[0] and "Traceback" not in err
    assert count_rows(tmp_path / "store.sqlite") == before  # the samples of the finished batches stay
    assert json.loads((tmp_path / "manifest.json").read_text())["sampling"]["samples_per_prompt"] == 1  # as it was


@pytest.mark.usefixtures("cluster")
def test_scores_from_the_pool_equal_scores_in_this_process(tmp_path):
    from nlgbias.pipeline.distributed import RayPool
    from nlgbias.scorers import get_scorer
    from nlgbias.store import RunStore
    from nlgbias.store.cache import fill_scores

    texts = [f"XYZ was {'very ' * (i % 7)}{['kind', 'rude', 'a nurse', 'lazy', 'brave'][i % 5]} {i}" for i in range(300)]
    for name in ("vader", "regard"):  # regard: other chunks on the workers than here, the same bits (batch invariance)
        scorer = get_scorer(name)
        with RunStore(tmp_path / f"here-{name}.sqlite") as store:
            here = fill_scores(texts, scorer, store, batch_size=300)
        with RayPool(RayOptions(workers=2)) as pool, RunStore(tmp_path / f"ray-{name}.sqlite") as store:
            there = fill_scores(texts, scorer, store, batch_size=37, remote=pool.score)
        assert len(here) == 300
        pd.testing.assert_frame_equal(here.sort_values("text_hash", ignore_index=True),
                                      there.sort_values("text_hash", ignore_index=True))


def test_a_killed_driver_resumes_without_ray_to_the_same_outputs(single, cluster, tiny_model_dir, tmp_path):
    args = ["run", "sheng2019", "--model", str(tiny_model_dir), *TINY_ARGS, "--out", str(tmp_path)]
    one_thread = {"OMP_NUM_THREADS": "1"}  # as the baseline; two threads crawl on a busy 2-core machine
    proc = run_cli(args + ["--ray-address", cluster], env=one_thread)
    deadline = time.monotonic() + 300
    while count_rows(tmp_path / "store.sqlite") < 8 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)
    assert proc.poll() is None, "the run finished before it could be killed: " + proc.stderr.read().decode()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    partial = count_rows(tmp_path / "store.sqlite")
    assert 8 <= partial < 120 and partial % 4 == 0  # whole batches only
    resumed = run_cli(args, env=one_thread)
    assert resumed.wait(timeout=600) == 0, resumed.stderr.read().decode()
    same_outputs(tmp_path, single)
    with sqlite3.connect(tmp_path / "store.sqlite") as db:
        assert db.execute("SELECT COUNT(*), COUNT(DISTINCT generation_id) FROM generations").fetchone() == (120, 120)


def test_a_pool_larger_than_the_cluster_is_refused_in_one_line(cluster, tmp_path, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["run", "sheng2019", "--model", "fake", "--samples", "1", "--out", str(tmp_path / "o"),
              "--ray-address", cluster, "--workers", "3"])
    err = capsys.readouterr().err
    assert caught.value.code == 2
    assert err == "Error: --workers 3: the pool needs 3 CPUs; the Ray cluster has 2 CPUs and 0 GPUs\n"
    assert not (tmp_path / "o").exists()


def test_without_ray_installed_ray_says_how_to_install_it(tmp_path):
    block = ("import sys\n"
             "class NoRay:\n"
             "    def find_spec(self, name, path=None, target=None):\n"
             "        if name == 'ray' or name.startswith('ray.'):\n"
             "            raise ModuleNotFoundError(\"No module named 'ray'\", name='ray')\n"
             "sys.meta_path.insert(0, NoRay())\n"
             "from nlgbias.cli import main\n"
             "main(sys.argv[1:])\n")
    done = subprocess.run([sys.executable, "-c", block, "run", "sheng2019", "--model", "fake", "--samples", "1",
                           "--out", str(tmp_path / "o"), "--ray"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert done.stderr == ("Error: --ray: Ray is not installed here; install it with: pip install 'nlgbias[ray]'\n")
    assert not (tmp_path / "o").exists()


def test_a_server_model_is_asked_from_this_process_not_through_ray(cluster, tmp_path, capsys):
    from fakeserver import FakeServer

    with FakeServer() as server:
        with pytest.raises(SystemExit) as caught:
            main(["run", "sheng2019", "--model", f"openai:served@{server.url}", "--samples", "1", "--scorer", "vader",
                  "--n-boot", "100", "--out", str(tmp_path), "--ray-address", cluster])
            raise SystemExit(0)
    assert caught.value.code == 0
    err = capsys.readouterr().err
    assert f"Note: openai:served@{server.url} is a server model: requests go from this process, not through Ray" in err
    assert len(server.answered) == 60 and count_rows(tmp_path / "store.sqlite") == 60
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["execution"]["ray"]["replaced_workers"] == 0


@pytest.mark.usefixtures("cluster")
def test_workers_score_with_the_classifier_folder_of_regard_dir(tmp_path):
    """``--scorer regard:DIR`` on the pool: each worker loads DIR (here a copy of the first release's
    classifier, whose scores and version differ from the shipped ``regard``), not the shipped one."""
    import shutil

    from nlgbias.pipeline.distributed import RayPool
    from nlgbias.scorers import get_scorer
    from nlgbias.scorers.regard import classifier_dir
    from nlgbias.store import RunStore
    from nlgbias.store.cache import fill_scores

    mine = tmp_path / "mine"
    shutil.copytree(classifier_dir(3, 1), mine)
    texts = [f"XYZ was {['kind', 'rude', 'a nurse', 'lazy', 'brave'][i % 5]} and {['tall', 'quiet', 'late'][i % 3]}"
             for i in range(40)]
    scorer = get_scorer(f"regard:{mine}")
    assert scorer.name == "regard" and scorer.version != get_scorer("regard").version
    with RunStore(tmp_path / "here.sqlite") as store:
        here = fill_scores(texts, scorer, store, batch_size=10)
    with RayPool(RayOptions(workers=2)) as pool, RunStore(tmp_path / "ray.sqlite") as store:
        there = fill_scores(texts, scorer, store, batch_size=10, remote=pool.score)
    pd.testing.assert_frame_equal(here.sort_values("text_hash", ignore_index=True),
                                  there.sort_values("text_hash", ignore_index=True))
