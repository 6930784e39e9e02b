"""``helmflow retry``: it reads the store the flow run wrote to, and a bad id is one line."""

from __future__ import annotations

import subprocess
import uuid

import pytest

from helmflow.errors import HelmflowError
from helmflow.operations import STORAGE_LABEL, pairs_to_rerun, retry_storage
from helmflow.storage import Store
from tests.support.cli import flow_run_id_from, run_cli, run_python


def test_storage_comes_from_the_run_then_its_label_then_the_flag(tmp_path):
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    assert retry_storage({"storage": a}, {}, None) == (a, "the flow run's storage parameter")
    assert retry_storage({"storage": a}, {}, a) == (a, "the flow run's storage parameter")
    assert retry_storage({"storage": None}, {STORAGE_LABEL: b}, None) == (b, "the storage its flow recorded")
    assert retry_storage({}, {}, b) == (b, "--storage")
    with pytest.raises(HelmflowError, match="is not where this flow run wrote"):
        retry_storage({"storage": a}, {}, b)
    with pytest.raises(HelmflowError, match="pass --storage URL"):
        retry_storage({"storage": None}, {}, None)


def test_pairs_to_rerun_reads_the_given_store(tmp_path):
    selection = {"scenarios": ["arithmetic-3"], "models": ["offline/solver", "offline/echo"], "max_instances": 2}
    params = {"board": "demo", "selection": selection}  # a flow run's parameters
    # the scenario's perturbed copies (its robustness and fairness runs) are cells to re-run too
    assert pairs_to_rerun(params, Store(str(tmp_path / "empty"))) == [
        f"arithmetic-3{copy} x {model}" for copy in ("", "~mild_mix", "~gender", "~person_name")
        for model in ("offline/solver", "offline/echo")]
    # once the flow's pre-flight stored the copies' instances, the fairness copies (no pronoun or name
    # in an arithmetic question: nothing changed) are no cells: the flow leaves them out
    from helmflow.pipeline import preflight
    from helmflow.plan.compile import prepare

    store = Store(str(tmp_path / "ran"))
    preflight(store, prepare("demo", **selection))
    assert pairs_to_rerun(params, store) == [f"arithmetic-3{copy} x {model}" for copy in ("", "~mild_mix")
                                             for model in ("offline/solver", "offline/echo")]
    # a flow run made before the selection was one parameter names its fields one by one
    assert pairs_to_rerun({"board": "demo", **selection, "no_judge": False}, store) == pairs_to_rerun(params, store)


def _ok(out: subprocess.CompletedProcess) -> subprocess.CompletedProcess:
    assert out.returncode == 0, out.stdout + out.stderr
    return out


@pytest.mark.slow
def test_retry_dry_run_reads_the_workers_storage_not_the_clis(prefect_server, tmp_path):
    """Reproduced first: a run started without a storage parameter (as a deployment's worker does, its
    $HELMFLOW_STORAGE deciding) made `retry --dry-run` look in the CLI's ./helmflow-store and list
    every pair; it now reads the root the flow recorded and says so."""
    worker_root = tmp_path / "worker-store"
    code = ("from helmflow.flows.evaluate import evaluate\n"
            "s = evaluate(board='demo', selection={'scenarios': ['arithmetic-3'], 'models': ['offline/solver'],"
            " 'max_instances': 2}, return_state=True)\nprint('flow run:', s.state_details.flow_run_id)\n")
    env = {"HELMFLOW_STORAGE": str(worker_root)}
    worker = tmp_path / "worker"
    worker.mkdir()
    flow_run_id = flow_run_id_from(_ok(run_python(code, env=env, cwd=worker, timeout=300)))
    cli_dir = tmp_path / "elsewhere"
    cli_dir.mkdir()
    dry = _ok(run_cli("retry", str(flow_run_id), "--dry-run", cwd=cli_dir))
    assert f"storage: {worker_root} (from the storage its flow recorded)" in dry.stdout, dry.stdout
    assert "every pair is cached" in dry.stdout, dry.stdout
    assert not (cli_dir / "helmflow-store").exists()
    other = _ok(run_cli("run", "demo", "--scenarios", "arithmetic-3", "--models", "offline/solver", "--max-instances", "2",
                        "--storage", str(tmp_path / "cli-store"), cwd=cli_dir))
    dry = _ok(run_cli("retry", str(flow_run_id_from(other)), "--dry-run", cwd=cli_dir))
    assert f"storage: {tmp_path / 'cli-store'} (from the flow run's storage parameter)" in dry.stdout
    wrong = run_cli("retry", str(flow_run_id_from(other)), "--dry-run", "--storage", str(worker_root), cwd=cli_dir)
    assert wrong.returncode == 2 and "is not where this flow run wrote" in wrong.stderr


@pytest.mark.slow
def test_retry_unknown_flow_run_is_one_line(prefect_server, tmp_path):
    missing = uuid.uuid4()
    out = run_cli("retry", str(missing), "--dry-run", cwd=tmp_path)
    assert out.returncode == 2, out.stdout + out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and f"no flow run {missing} on the Prefect server" in lines[0], out.stderr
    assert "Traceback" not in out.stderr
