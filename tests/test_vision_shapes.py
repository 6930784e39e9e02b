"""The offline vision scenario and the offline vision deployment that answers it from the pixels."""

from __future__ import annotations

import asyncio

import pytest

from helmflow.clients import load_deployments, make_client
from helmflow.clients.offline import offline_call_count
from helmflow.media import MediaStore
from helmflow.pipeline import adapt_scenario, download_scenario, query_pair, score_pair
from helmflow.plan.compile import plan_board
from helmflow.plan.spec import load_board
from helmflow.records import ContentPart, RequestBody
from helmflow.scenarios import get_scenario
from helmflow.scenarios.vision_shapes import Shape, draw
from helmflow.storage import Store


def test_generated_images_are_seeded_and_answers_exact(store: Store):
    a, b = get_scenario("vision_shapes", {"num_test": 8}), get_scenario("vision_shapes", {"num_test": 8})
    a.media, b.media = MediaStore(store), MediaStore(store)
    first, second = a.load({}), b.load({})
    assert [i.model_dump() for i in first] == [i.model_dump() for i in second]
    assert all(i.input.parts[0].type == "image" and store.exists(i.input.parts[0].uri) for i in first)
    assert len({i.input.parts[0].sha256 for i in first}) > 1


def ask(store: Store, shapes: list[Shape], question: str) -> str:
    part = MediaStore(store).put(draw(shapes), "test image")
    client = make_client(load_deployments()["offline/vision"], store)
    body = RequestBody(model="vision", max_tokens=5, temperature=0,
                       parts=[part, ContentPart(type="text", text=question)])
    return asyncio.run(client.complete(body)).text


def test_offline_vision_answers_from_the_pixels(store: Store):
    shapes = [Shape(kind="circle", color="red", cell=0), Shape(kind="triangle", color="blue", cell=8),
              Shape(kind="square", color="green", cell=4)]
    assert ask(store, shapes, "How many shapes are in the image?") == "3"
    assert ask(store, shapes, "What color is the triangle?") == "blue"
    assert ask(store, shapes, "What shape is the red object?") == "circle"
    assert ask(store, shapes, "Where is the green square?") == "center"
    assert ask(store, shapes[:1], "How many shapes are in the image?") == "1"  # same words, another image


@pytest.mark.slow
def test_vision_demo_board_offline(store: Store):
    plan = plan_board(load_board("vision-demo"), load_deployments(), max_instances=12)
    data = {s.label: download_scenario(store, s) for s in plan.all_scenarios}
    prompts = {s.label: adapt_scenario(store, s, data[s.label]) for s in plan.all_scenarios}
    scores = {}
    for run in plan.runs:
        query = query_pair(store, run, prompts[run.scenario.label])
        assert query.errors == 0
        scores[(run.scenario.label, run.deployment.name)] = score_pair(store, run, data[run.scenario.label], query).score
    for label in ("shapes-open", "shapes-open-2shot", "shapes-mc", "shapes-image-choice"):
        assert scores[(label, "offline/vision")] == 1.0
        assert scores[(label, "offline/first-option")] < 0.5 and scores[(label, "offline/echo")] < 0.5


@pytest.mark.slow
def test_helmflow_run_vision_demo_offline_then_fully_cached(tmp_path, prefect_server):
    from tests.support.cli import run_cli

    storage = tmp_path / "store"
    env = {"HF_HUB_OFFLINE": "1", "HELMFLOW_MIRROR": str(tmp_path / "no-mirror-needed")}
    first = run_cli("run", "vision-demo", "--storage", str(storage), env=env, timeout=900)
    assert first.returncode == 0, first.stdout + first.stderr
    store = Store(str(storage))
    latest = store.read_json("leaderboards/vision-demo/latest.json")
    board = store.read_parquet(latest["uri"].removeprefix(store.root + "/") + "/leaderboard.parquet").to_pylist()
    assert board[0]["deployment"] == "offline/vision" and board[0]["mean_score"] == 1.0
    assert {"aspect:open_answers", "aspect:multiple_choice"} <= set(board[0])
    calls = offline_call_count(store, "offline/vision")
    again = run_cli("run", "vision-demo", "--storage", str(storage), env=env, timeout=900)
    assert again.returncode == 0 and offline_call_count(store, "offline/vision") == calls  # nothing re-sent
