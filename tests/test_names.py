"""Display names: one short, unique name per model of a run (nlgbias.models.names)."""

import pandas as pd

from nlgbias.metrics.results import rename_models
from nlgbias.models.names import model_names


def test_short_names_for_each_kind_of_model_value():
    specs = ["smollm2-135m", "fake", "openai:fake-1@http://127.0.0.1:8000/v1", "models/gemma.gguf", "./runs/tiny/",
             "HuggingFaceTB/SmolLM2-360M", "hf:org/other"]
    assert list(model_names(specs).values()) == ["smollm2-135m", "fake", "fake-1", "gemma", "tiny", "SmolLM2-360M",
                                                 "other"]


def test_colliding_names_take_the_host_or_parent_folder_then_the_full_value():
    assert model_names(["openai:m@http://a:1/v1", "openai:m@http://b:2/v1"]) == \
        {"openai:m@http://a:1/v1": "m@a:1", "openai:m@http://b:2/v1": "m@b:2"}
    assert model_names(["a/x/tiny", "b/x/tiny"]) == {"a/x/tiny": "a/x/tiny", "b/x/tiny": "b/x/tiny"}
    assert model_names(["a/tiny", "b/tiny", "fake"]) == {"a/tiny": "a/tiny", "b/tiny": "b/tiny", "fake": "fake"}
    # served name "fake" collides with the fake backend: each keeps a distinct name
    names = model_names(["fake", "openai:fake@http://h:1/v1"])
    assert len(set(names.values())) == 2 and names["fake"] == "fake"


def test_names_are_unique_for_any_mix():
    specs = ["openai:m@http://a:1/v1", "openai:m", "x/m.gguf", "m", "hf:m", "y/m"]
    names = model_names(specs)
    assert len(set(names.values())) == len(specs)


def test_rename_models_maps_every_model_column_and_leaves_others():
    table = pd.DataFrame({"model_a": ["./t", "fake"], "model_b": ["fake", "./t"], "group": ["./t", "x"]})
    out = rename_models(table, {"./t": "t"})
    assert out.to_dict(orient="list") == {"model_a": ["t", "fake"], "model_b": ["fake", "t"], "group": ["./t", "x"]}
