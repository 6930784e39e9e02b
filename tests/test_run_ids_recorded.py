"""Behaviour unchanged by refactoring: the demo and Capabilities boards plan to the run ids recorded
before the code was restructured. A run id changes only when what makes a number
changes (scenario data, prompt, model, metrics, judges): a move of code must not change one.

If you change a scenario, template or metric VERSION on purpose, re-record the list in the same commit.
"""

from __future__ import annotations

import json

from tests.support.capabilities_fixtures import csv_bytes, gpqa_rows, mirror_folder, mmlu_pro_files
from tests.support.judge_fixtures import (
    OMNI_FILE,
    WILDBENCH_FILE,
    omni_jsonl,
    omni_rows,
    wildbench_parquet,
    wildbench_rows,
)

DEMO_BOARD_VERSION = "7f212da8da3e6d52"  # version 4: perturbations on two scenarios
DEMO_RUN_IDS = [
    "e66df003fc848473", "dcc7e2663dc5b29e", "dc565f36524bc4fc", "71f0d9b433825ad1", "9e834d30d7875516", "ecac2c7f280e92c8",
    "6f091efb20001191", "e57dacd9de2d92e0", "38301917aa4e74b5", "fc6600919b5ba368", "dbb14b80846cacca", "7f21358020a3248c",
    "9e91aaf5126e0df2", "f1f60f8363a7f77b", "9dd4aecf4cdaef26", "69f262f6eb25e0cb", "656ec716d3783067", "25a38461ffe1d67e",
    "49c3ea7bf2a70cd8", "4c540d468b8a168b", "90918afe99e75903", "e76447c0396a4ddd", "d343faebb189f518", "b5c6711cd4b550db",
    "fda86fd0769bc9ec", "424d2fdf24982cc6", "788c49d62d6fe6f1", "e03b8cbebd4abf77", "ec645d4c9b41278d", "53472b313d8ff941",
    "92e7112597181a26", "f244c04d11c6a4fe",
]
# the perturbed copies (mild_mix, gender, person_name of arithmetic-3 and arithmetic-mc): adding them left
# every original run id above unchanged (arithmetic-mc's four and its copies changed with calibration VERSION 2)
DEMO_PERTURBED_RUN_IDS = [
    "16f319e446c7a56f", "f24d7a8e97553ab7", "1e2267ccb57b2f3a", "5704c1567f731fc1", "d578b2e19af2c98e", "e92b63918e3b6074",
    "f301faa9e3e5a340", "c694d5a2d4216e7c", "6daddac5950ec956", "f8a2761404aa70bb", "4adf087ee5341c4e", "86e1ed87d99d1d22",
    "a30705bf5666b8dd", "f631562cfeb5e916", "ea77b106ba0a50d6", "46961a2f6dde1753", "8751fb8ea3bb9f5c", "d95a37e20a040a24",
    "33524edd29dff02a", "e2dc1cc5ba08b773", "b4ec734fea1403c2", "3109c5653c6a58fb", "71f8c84d31320141", "b8763fafecc7e0e7",
]
CAPABILITIES_BOARD_VERSION = "5a3a66bb6098077c"
CAPABILITIES_RUN_IDS = [  # models offline/echo, offline/solver; jury offline/echo, offline/solver
    "db8893d017032526", "bd17374a6da4273a", "e2fc2a3d8682466f", "cd0c5448171f96bf", "ffba1a05bcd19460", "479344ca58f0fa3d",
    "25be7f79740235f2", "b7fcaadeb16c9082", "0696b55f7f4539fe", "f35641146dbbefde",
]


def test_demo_board_plans_the_recorded_run_ids():
    from helmflow.plan.compile import prepare

    plan = prepare("demo")
    assert plan.board_version == DEMO_BOARD_VERSION
    assert [r.run_id for r in plan.runs] == DEMO_RUN_IDS + DEMO_PERTURBED_RUN_IDS


def test_capabilities_board_with_a_jury_plans_the_recorded_run_ids(tmp_path, monkeypatch):
    def folder(name: str, files: dict[str, bytes]) -> str:
        return mirror_folder(tmp_path, name, files)

    rows = [{"key": 10 + k, "prompt": f"Fixture request {k}: describe a fixture without commas.",
             "instruction_id_list": ["punctuation:no_comma"], "kwargs": [{}]} for k in range(25)]
    mirrors = {
        "HELMFLOW_MIRROR_MMLU_PRO": folder("mmlu_pro", mmlu_pro_files(n_test=60, n_validation=70)),
        "HELMFLOW_MIRROR_GPQA": folder("gpqa", {"gpqa_main.csv": csv_bytes(gpqa_rows(30))}),
        "HELMFLOW_MIRROR_IFEVAL": folder("ifeval", {"ifeval_input_data.jsonl": ("\n".join(json.dumps(r) for r in rows) + "\n").encode()}),
        "HELMFLOW_MIRROR_WILDBENCH": folder("wildbench", {WILDBENCH_FILE: wildbench_parquet(wildbench_rows(["[ans:right]"] * 24))}),
        "HELMFLOW_MIRROR_OMNI_MATH": folder("omni", {OMNI_FILE: omni_jsonl(omni_rows(["[ans:right]"] * 24))}),
    }
    for key, value in mirrors.items():
        monkeypatch.setenv(key, value)
    from helmflow.plan.compile import prepare

    jury = ["offline/echo", "offline/solver"]
    plan = prepare("capabilities", models=["offline/echo", "offline/solver"], judges=jury, check_credentials=False)
    assert plan.board_version == CAPABILITIES_BOARD_VERSION
    assert [r.run_id for r in plan.runs] == CAPABILITIES_RUN_IDS
