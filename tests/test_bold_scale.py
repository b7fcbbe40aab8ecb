"""A BOLD sample at scale: through a real local Ray cluster and through several servers, each
compared row by row with the same run in one process (or on one server).

The Ray test uses the tiny random model (tests/conftest.py) on two 1-CPU actors; the server test
uses tests/fakeserver.py, whose answer depends only on (prompt, seed), so any server answers a
request alike.  Five subgroups (tests/test_bold.py), two prompts each.
"""

from __future__ import annotations

import pandas as pd
import pytest

import nlgbias
from fakeserver import FakeServer
from nlgbias.models import BackendOptions
from nlgbias.pipeline.distributed import RayOptions
from test_bold import handful_suite
from test_distributed import cluster, same_outputs  # noqa: F401 (cluster: the module's Ray instance)
from test_servers import assert_same_outputs

OPTIONS = dict(prompts_per_group=2, samples=2, scorers=["vader-bold"], n_boot=200, quiet=True)  # 20 samples


@pytest.mark.ray
@pytest.mark.usefixtures("cluster")
def test_a_bold_sample_on_two_ray_actors_equals_one_process(tiny_model_dir, tmp_path):
    suite = handful_suite(tmp_path / "suite")
    options = dict(models=[str(tiny_model_dir)], batch_size=4, max_new_tokens=12, **OPTIONS)
    nlgbias.run(str(suite), out=tmp_path / "single", **options)
    result = nlgbias.run(str(suite), out=tmp_path / "ray", ray=RayOptions(workers=2), **options)
    assert result.generated == 20 and result.manifest["execution"]["ray"]["workers"] == 2
    same_outputs(tmp_path / "ray", tmp_path / "single")
    samples = pd.read_parquet(tmp_path / "ray" / "samples.parquet")
    assert samples.groupby("group")["prompt_id"].nunique().eq(2).all()
    assert "polarity_shares" in (tmp_path / "ray" / "metrics.json").read_text()


def test_a_bold_sample_over_three_servers_equals_one_server(tmp_path):
    suite = handful_suite(tmp_path / "suite")
    with FakeServer() as one, FakeServer() as two, FakeServer() as three:
        nlgbias.run(str(suite), models=["openai:served"], out=tmp_path / "single",
                    backend_options=BackendOptions(api_base=one.url), **OPTIONS)
        assert len(one.answered) == 20
        result = nlgbias.run(str(suite), models=["openai:served"], out=tmp_path / "three",
                             backend_options=BackendOptions(api_base=[one.url, two.url, three.url], concurrency=2),
                             **OPTIONS)
        served = [s["answered"] for s in result.manifest["models"][0]["servers"]]
        assert sum(served) == 20 and sum(1 for n in served if n) >= 2  # the requests were spread
    assert_same_outputs(tmp_path / "three", tmp_path / "single")
