"""HELM Classic at full shape on fixtures: wall time, CPU and peak memory of `helmflow run classic`, per model count.

    python benchmarks/classic_board.py [--models 1,2,3] [--max-instances 3]

Builds every Classic source as fixture files (tests/support/classic_fixtures.py and the harms fixtures: served on
127.0.0.1 and mirrored with `helmflow mirror classic`), fetches the perturbation assets, then runs the whole board
(every entry of flows/classic.yaml whose fixtures plan; the others are named) through the real CLI on fresh storage, once per model count: the dev server
under HELM's ``openai/davinci`` name (completions with log-probs), then ``offline/first-option``, then
``offline/echo``; the instruction-following critiques are asked of an offline critic. Prefect is the server $PREFECT_API_URL names, else a temporary one per command (``--ephemeral``).

Printed per model count: runs published, seconds, CPU seconds of the command and all its children (``wait4``'s
rusage: the CLI, its temporary Prefect server, sandboxed code runs), and peak RSS of the largest of them (the CLI
process, as ``ru_maxrss`` of the children reports the largest child). A benchmark, not a test: numbers depend on
the machine and its load, which is printed with them.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # tests.support

DEV = "openai/davinci"
MODELS = [DEV, "offline/first-option", "offline/echo"]
CRITIC = "offline/critic"  # the instruction-following entries' judge: answers every critique question "b"


def prepare(tmp: Path) -> tuple[Path, Path]:
    """The mirrored sources and a storage root holding the fetched perturbation assets."""
    from tests.support.classic_fixtures import ASSETS, classic_hub_mirrors, classic_source_tree, perturbation_assets
    from tests.support.lite_fixtures import serve

    root = perturbation_assets(classic_source_tree(tmp / "src"))
    mirror, storage = tmp / "mirror", tmp / "assets-store"
    with serve(root) as host:
        env = {"HELMFLOW_SOURCE_HOST": host.url, "HELMFLOW_GITHUB_RAW": f"{host.url}/raw.githubusercontent.com",
               **classic_hub_mirrors(tmp / "hub")}
        cli("mirror", "classic", "--to", str(mirror), env=env)
        cli("fetch-assets", "perturbations", "--storage", str(storage),
            env={"HELMFLOW_ASSETS_URL": f"{host.url}/{ASSETS}"})
    return mirror, storage


def runnable(mirror: Path, storage: Path, models: Path, n: int) -> tuple[list[str], list[str]]:
    """The board's entries whose fixtures plan (``run --dry-run``), and those left out: the fixtures are written
    for the tests, and a few cover only the entries the tests run (WikiFact's relations, for one)."""
    import re

    from helmflow.plan.spec import load_board

    entries = [(e.label or e.name, e.name) for e in load_board("classic").scenarios]
    keep, dropped = [label for label, _ in entries], []
    env = {**os.environ, "HELMFLOW_MIRROR": str(mirror)}

    def dry(labels: list[str]) -> str:
        out = subprocess.run([sys.executable, "-m", "helmflow.cli", "run", "classic", "--dry-run", "--models", DEV,
                              "--models-file", str(models), "--scenarios", ",".join(labels), "--max-instances",
                              str(n), "--storage", str(storage)], env=env, capture_output=True, text=True)
        return "" if out.returncode == 0 else out.stdout + out.stderr

    while error := dry(keep):
        match = re.search(r"scenario '([^']+)' produced no instances", error)
        if not match:
            sys.exit(f"the board does not plan on the fixtures:\n{error[-3000:]}")
        for label in [lab for lab, name in entries if name == match.group(1) and lab in keep]:
            if dry([label]):
                keep.remove(label)
                dropped.append(label)
    return keep, dropped


def cli(*args: str, env: dict[str, str] | None = None) -> tuple[float, float, int]:
    """Runs ``helmflow ARGS`` to completion: (seconds, CPU seconds of it and its children, peak RSS in MB)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "helmflow.cli", *args], env={**os.environ, **(env or {})},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out, _ = proc.communicate()
    seconds = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"helmflow {' '.join(args[:2])} failed ({proc.returncode}):\n{out[-4000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, cpu, after.ru_maxrss // 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="1,2,3", help="comma-separated model counts (default 1,2,3)")
    parser.add_argument("--max-instances", type=int, default=3)
    args = parser.parse_args()
    from helmflow.devserver import start_dev_server
    from tests.support.devserver import FAST_RETRY

    with tempfile.TemporaryDirectory(prefix="classic-board-") as name:
        tmp = Path(name)
        mirror, assets = prepare(tmp)
        print(f"machine: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}; "
              f"--max-instances {args.max_instances}; Prefect: {os.environ.get('PREFECT_API_URL', 'ephemeral')}")
        with start_dev_server() as server:
            models = tmp / "models.yaml"
            models.write_text(yaml.safe_dump({"deployments": [
                {"name": DEV, "client": "openai-compatible", "model": "model-x", "base_url": server.openai_url,
                 "options": {"endpoint": "completions"}, "logprobs": True, "retry": FAST_RETRY,
                 "max_concurrency": 16},
                {"name": CRITIC, "client": "offline", "model": "critic", "options": {"behavior": "constant", "answer": " b."}}]}))
            labels, dropped = runnable(mirror, assets, models, args.max_instances)
            print(f"{len(labels)} of {len(labels) + len(dropped)} entries plan on the fixtures; "
                  f"left out: {', '.join(dropped) or 'none'}")
            for count in (int(c) for c in args.models.split(",")):
                storage = tmp / f"store-{count}"
                subprocess.run(["cp", "-r", str(assets), str(storage)], check=True)
                load = os.getloadavg()[0]
                extra = [] if os.environ.get("PREFECT_API_URL") else ["--ephemeral"]
                seconds, cpu, rss = cli("run", "classic", "--models", ",".join(MODELS[:count]),
                                        "--models-file", str(models), "--scenarios", ",".join(labels), "--judge", CRITIC,
                                        "--max-instances", str(args.max_instances),
                                        "--storage", str(storage), *extra, env={"HELMFLOW_MIRROR": str(mirror)})
                runs = sum(1 for _ in storage.glob("runs/*/run.json"))
                latest = json.loads(next(storage.glob("leaderboards/classic/latest*.json")).read_text())
                print(f"{count} model(s): {runs} runs, {seconds:.1f} s, {cpu:.1f} CPU-s, peak RSS {rss} MB, "
                      f"load {load:.1f} -> {os.getloadavg()[0]:.1f}, release {latest.get('status', '?')}")


if __name__ == "__main__":
    main()
