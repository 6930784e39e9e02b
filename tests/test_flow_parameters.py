"""A flow run's parameters, as helmflow's flows send them to Prefect: the JSON FastAPI's encoder makes
(Prefect's own way), without importing FastAPI for the plain values the board flows take."""

from __future__ import annotations

import enum
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from helmflow.flows.evaluate import HelmflowFlow, evaluate, jsonable
from helmflow.plan.selection import Selection


class Color(str, enum.Enum):
    RED = "red"


class Aliased(BaseModel):
    value: int = Field(alias="theValue")
    inner: Selection = Selection()


PLAIN = [
    {"board": "demo", "selection": Selection(), "storage": "/tmp/store", "models_file": None, "plugins": [],
     "budget_usd": None},
    {"board": {"name": "eval-x", "scenarios": [{"name": "dyck_language", "params": {"n": "3"}}], "max_instances": 5},
     "selection": Selection(models=["a/b"], max_instances=3, judges=["j/1"], board_wide={"m": "on"}, adaptive=True,
                            model_ability=0.5),
     "storage": "s3://bucket/root", "models_file": "/m.yaml", "plugins": ["p.py"], "budget_usd": 2.5},
    {"scenario": "dyck_language:num_parenthesis_pairs=3", "board": "eval", "cells": ["a x b"], "storage": "/s"},
    {"nested": ({"t": (1, 2.0, True, None)},), "aliased": Aliased(theValue=4), "nan": float("nan")},
]
NOT_PLAIN = [Color.RED, Path("/tmp/x"), {1, 2}, {"_sa_state": 1, "kept": 2}, {3: "int key"}, b"bytes"]


@pytest.mark.parametrize("parameters", PLAIN)
def test_plain_parameters_are_what_fastapis_encoder_makes(parameters):
    from fastapi.encoders import jsonable_encoder

    ours = evaluate.serialize_parameters(parameters)
    theirs = {k: jsonable_encoder(v) for k, v in parameters.items()}
    assert repr(ours) == repr(theirs)  # repr: equal NaNs, and int/float/bool kept apart


@pytest.mark.parametrize("value", NOT_PLAIN)
def test_any_other_value_goes_through_prefects_encoder(value):
    from fastapi.encoders import jsonable_encoder

    with pytest.raises(Exception):  # noqa: B017 - the private "not plain" signal
        jsonable(value)
    assert evaluate.serialize_parameters({"x": value, "y": "plain"}) == {"x": jsonable_encoder(value), "y": "plain"}


def test_with_options_keeps_the_flow_class():
    named = evaluate.with_options(name="demo")
    assert isinstance(named, HelmflowFlow) and named.name == "demo" and named.fn is evaluate.fn

