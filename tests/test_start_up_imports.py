"""What a command imports only when it needs it: each import named here costs a few tenths of a CPU-second
of every command that would otherwise pay it."""

from __future__ import annotations

import subprocess
import sys


def test_a_board_flows_parameters_do_not_import_fastapi():
    """FastAPI's import (about 0.2 CPU-s) is paid only for a parameter that needs its encoder."""
    code = ("import sys\nfrom helmflow.flows.demo import demo\nfrom helmflow.plan.selection import Selection\n"
            "demo.with_options(name='demo').serialize_parameters({'selection': Selection(models=['a/b']), "
            "'storage': '/s', 'plugins': None})\n"
            "print('fastapi' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-1] == "False"


def test_a_published_boards_preflight_check_does_not_import_pandas(tmp_path):
    """Whether a perturbed copy changed an instance is read without converting Python values to Arrow, which
    imports pandas (0.2 CPU-s): a run of a board whose release is published needs nothing else of it."""
    import pyarrow as pa

    from helmflow.pipeline import perturbed_any
    from helmflow.storage import Store

    store = Store(str(tmp_path))
    for key, splits in {"a.parquet": ["train", "train"], "b.parquet": ["train", "test"], "c.parquet": [None, "train"],
                        "d.parquet": [], "e.parquet": [None, "valid"]}.items():
        store.write_parquet(key, pa.table({"split": pa.array(splits, pa.string())}))
    assert [perturbed_any(store, f"{k}.parquet") for k in "abcde"] == [False, True, False, False, True]
    code = (f"import sys\nfrom helmflow.pipeline import perturbed_any\nfrom helmflow.storage import Store\n"
            f"print(perturbed_any(Store({str(tmp_path)!r}), 'b.parquet'), 'pandas' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split()[-2:] == ["True", "False"]
