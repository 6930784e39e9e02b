"""Scenario data a run cannot use is bad input found before any task.

Reproduced first: each case below made `helmflow run` start the flow, fail inside the download
task (exit 1) and publish an empty partial release, while `--dry-run` passed the duplicate ids.
Now the pre-flight (the download stage, before Prefect starts) and `--dry-run` refuse the same data
with the same one line, exit 2, and nothing is queried or published.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.cli import run_cli

HEADER = "id,question,a,b,c,answer,split\n"
GOOD = "q1,Which is a colour?,blue,seven,run,A,test\n"  # written for this test


def _custom(path: Path) -> str:
    return f"custom:path={path},choices=a|b|c,id=id"


CSV_CASES = {
    "bad-row": (HEADER + GOOD + "q2,Too few fields,x,y\n", "line 3 does not have 7 fields"),
    "bad-letter": (HEADER + GOOD + "q2,Pick one,x,y,z,E,test\n", "'E' is not a letter, a 0-based index"),
    "header-only": (HEADER, "has no data rows (a header only)"),
    "duplicate-ids": (HEADER + GOOD + "q2,Another?,x,y,z,B,test\n" + "q1,Again?,x,y,z,C,test\n",
                      "id 'q1' appears on lines 2 and 4; ids must be unique"),
}


def _refused_alike(spec: str, tmp_path: Path, message: str, env: dict[str, str] | None = None) -> None:
    store = tmp_path / "store"
    outs = [run_cli("eval", spec, "--models", "offline/solver", "--storage", str(store), *extra, env=env, cwd=tmp_path)
            for extra in ([], ["--dry-run"])]
    for out in outs:
        assert out.returncode == 2, out.stdout + out.stderr
        errors = [line for line in out.stderr.splitlines() if line.strip()]
        assert len(errors) == 1 and message in errors[0], out.stderr
        assert "Traceback" not in out.stdout + out.stderr
    assert outs[0].stderr == outs[1].stderr  # run and --dry-run agree, word for word
    assert not (store / "runs").exists() and not (store / "leaderboards").exists() and not (store / "prefect-results").exists()


@pytest.mark.parametrize("case", sorted(CSV_CASES))
@pytest.mark.slow
def test_custom_csv_problems_exit_2_before_any_task(case, tmp_path):
    text, message = CSV_CASES[case]
    path = tmp_path / "quiz.csv"
    path.write_text(text, encoding="utf-8")
    _refused_alike(_custom(path), tmp_path, message)


def test_non_utf8_csv_exits_2_naming_the_file(tmp_path):
    path = tmp_path / "latin1.csv"
    path.write_bytes((HEADER + "q1,Café?,oui,non,peut-être,A,test\n").encode("latin-1"))
    _refused_alike(_custom(path), tmp_path, f"{path} is not UTF-8 text")


def _ifeval_row(key: int, instruction: str = "punctuation:no_comma", kwargs: dict | None = None) -> str:
    return json.dumps({"key": key, "prompt": "Write about a harbour.", "instruction_id_list": [instruction],
                       "kwargs": [kwargs or {}]})


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([_ifeval_row(1), _ifeval_row(2, "keywords:teleport")], "line 2 (key 2): unknown IFEval instruction id"),
        ([_ifeval_row(1), _ifeval_row(2, "length_constraints:number_words", {"num_words": 40})],
         "line 2 (key 2)"),  # the checker needs its relation
        ([_ifeval_row(5), _ifeval_row(6), _ifeval_row(5)], "id '5' appears on lines 1 and 3; ids must be unique"),
    ],
)
@pytest.mark.slow
def test_ifeval_rows_the_checkers_refuse_and_duplicate_keys_exit_2(rows, message, tmp_path):
    mirror = tmp_path / "mirror"
    mirror.mkdir()
    (mirror / "ifeval_input_data.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    _refused_alike("ifeval", tmp_path, message, env={"HELMFLOW_MIRROR_IFEVAL": str(mirror)})


@pytest.mark.parametrize(("metric", "judge", "message"), [
    ("chain_of_thought_correctness", [], None),  # arithmetic has a correct reference: scorable, not refused
    ("ifeval", [], "scenario 'arithmetic': metric 'ifeval' scores instances whose extra has 'instruction_id_list'"),
    ("wildbench", ["--judge", "offline/solver"], "scenario 'arithmetic': judge template 'wildbench' needs a chat instance"),
])
@pytest.mark.slow
def test_a_metric_paired_with_a_scenario_it_cannot_score_exits_2_before_any_task(metric, judge, message, tmp_path):
    """Before: the run started, every cell failed inside its score task with a plain ValueError (exit 1,
    an empty partial release); now the metric's MetricError is bad configuration, exit 2, nothing sent."""
    store = tmp_path / "store"
    args = ["eval", "arithmetic", "--models", "offline/solver", "--max-instances", "3", "--metrics", metric, *judge,
            "--storage", str(store)]
    out = run_cli(*args, "--dry-run")
    if message is None:
        assert out.returncode == 0, out.stdout + out.stderr
        return
    assert out.returncode == 2, out.stdout + out.stderr
    errors = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("helmflow: error: ") and message in errors[0], out.stderr
    run = run_cli(*args)
    assert run.returncode == 2 and run.stderr == out.stderr, run.stdout + run.stderr  # the run refuses alike
    assert not (store / "_counters").exists() and not (store / "runs").exists()  # nothing was sent or published


# --------------------------------------------------------------------------- boards, storage and leases
def _one_line(out, code: int, message: str) -> None:
    assert out.returncode == code, out.stdout + out.stderr
    errors = [line for line in out.stderr.splitlines() if line.strip()]
    assert len(errors) == 1 and message in errors[0], out.stderr
    assert "Traceback" not in out.stdout + out.stderr


def _board_file(tmp_path: Path, name: str, source: str = "demo") -> Path:
    from helmflow.plan.spec import BOARDS_DIR

    text = (BOARDS_DIR / f"{source}.yaml").read_text(encoding="utf-8")
    path = tmp_path / "board.yaml"
    path.write_text("\n".join(f"name: {json.dumps(name)}" if line.startswith("name:") else line
                              for line in text.splitlines()) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow
def test_a_board_file_taking_a_shipped_boards_name_is_refused_unless_it_is_that_board(tmp_path):
    """Before: a board file saying `name: vision-demo` ran and moved the real vision-demo board's latest.json."""
    store = tmp_path / "store"
    impostor = _board_file(tmp_path, "vision-demo")
    for extra in ([], ["--dry-run"]):
        out = run_cli("run", "--board-file", str(impostor), "--models", "offline/echo", "--storage", str(store), *extra)
        _one_line(out, 2, "is named 'vision-demo', as helmflow's own 'vision-demo' board, but is not that board")
    assert not store.exists()
    same = _board_file(tmp_path, "vision-demo", source="vision-demo")  # that board's own content: fine
    out = run_cli("run", "--board-file", str(same), "--dry-run", "--storage", str(store))
    assert out.returncode == 0, out.stdout + out.stderr


def test_a_prompts_file_cannot_rename_a_board_into_a_shipped_boards_name(tmp_path):
    """A prompts file names its board <board>-<file stem>: before, a board file named `vision` run with
    `--prompts demo.yaml` published as vision-demo, into the shipped board's folder."""
    store = tmp_path / "store"
    board = _board_file(tmp_path, "vision")
    prompts = tmp_path / "demo.yaml"
    prompts.write_text('prompts:\n  arithmetic.global_prefix: "Note: "\n', encoding="utf-8")
    for extra in (["--dry-run"], []):
        out = run_cli("run", "--board-file", str(board), "--prompts", str(prompts), "--models", "offline/echo",
                      "--scenarios", "arithmetic", "--max-instances", "1", "--storage", str(store), *extra)
        _one_line(out, 2, f"board 'vision' with prompts file {prompts} is named 'vision-demo', as helmflow's own "
                          "'vision-demo' board, but is not that board")
    assert not store.exists()


@pytest.mark.parametrize("name", ["team/board", "board%2F", "a&b"])
@pytest.mark.slow
def test_a_board_name_prefect_cannot_take_exits_2_at_load(name, tmp_path):
    """Before: Prefect's InvalidNameError traceback once the flow started (`--dry-run` passed it)."""
    board = _board_file(tmp_path, name)
    for extra in ([], ["--dry-run"]):
        out = run_cli("run", "--board-file", str(board), "--models", "offline/echo", "--storage",
                      str(tmp_path / "store"), *extra)
        _one_line(out, 2, f"{name!r} cannot name a board")


@pytest.mark.slow
def test_a_storage_protocol_fsspec_does_not_know_is_one_line_exit_2(tmp_path):
    """Before: a 28-line traceback, exit 1."""
    for command in (["run", "demo", "--models", "offline/echo"], ["compact"], ["lineage", "demo"]):
        out = run_cli(*command, "--storage", "foo://x", cwd=tmp_path)
        _one_line(out, 2, "storage foo://x cannot be opened: Protocol not known: foo")


@pytest.mark.slow
def test_a_symlinked_lease_file_is_refused_in_one_line(tmp_path):
    """Before: refused (correctly) with a 29-line traceback."""
    store = tmp_path / "store"
    (store / "leases").mkdir(parents=True)
    outside = tmp_path / "elsewhere.json"
    outside.write_text("{}")
    (store / "leases" / "demo.json").symlink_to(outside)
    out = run_cli("run", "demo", "--models", "offline/echo", "--max-instances", "1", "--storage", str(store), cwd=tmp_path)
    _one_line(out, 1, "leases/demo.json resolves outside the storage root")
    assert outside.read_text() == "{}" and not (store / "runs").exists()


@pytest.mark.slow
def test_a_prompts_file_with_a_lone_surrogate_is_one_line_exit_2(tmp_path):
    """Before: a 35-line UnicodeEncodeError traceback from the prompt version's hash."""
    prompts = tmp_path / "p.yaml"
    prompts.write_text('prompts:\n  arithmetic.instructions: "a \\ud800 b"\n', encoding="utf-8")
    for extra in ([], ["--dry-run"]):
        out = run_cli("run", "demo", "--models", "offline/echo", "--scenarios", "arithmetic", "--prompts", str(prompts),
                      "--storage", str(tmp_path / "store"), *extra, cwd=tmp_path)
        _one_line(out, 2, f"prompts file {prompts}: arithmetic.instructions holds '\\ud800' at character 2")
    assert not (tmp_path / "store" / "runs").exists()
