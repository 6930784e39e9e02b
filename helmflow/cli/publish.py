"""``helmflow publish hf``: push a published release to a Hugging Face Hub dataset repository
(:mod:`helmflow.hub_publish`).

Exit codes: 0 pushed (or already there: nothing uploaded); 1 the Hub failed part way (what was
committed stands; running it again sends the rest); 2 bad input (no token, a bad repository id, an
unknown board or release, a token the Hub refuses, a file whose bytes are not the ones the release or its
run recorded), found before anything is uploaded.
"""

from __future__ import annotations

import argparse

from helmflow.cli.options import storage_arg


def cmd_publish_hf(args: argparse.Namespace) -> int:
    from helmflow.hub_publish import check_repo_id, hub_token

    repo = check_repo_id(args.repo)  # bad input: one line, before the store or the Hub is read
    token = hub_token()
    from helmflow.bundle import pick_release, release_runs
    from helmflow.hub_publish import publish_release
    from helmflow.storage import Store

    store = Store(args.storage)
    info = pick_release(store, args.board, args.release)
    runs = release_runs(store, info, verify=False)  # publish_release checks every byte it sends
    from helmflow.hub_publish import parse_hub_models

    hub_models = parse_hub_models(args.hub_model, runs)
    pushed = publish_release(store, info, runs, repo, token, private=args.private,
                             with_model_results=args.model_results or bool(hub_models), hub_models=hub_models)
    for label, why in pushed.refused.items():
        print(f"refused   {label}: {why}; its runs' rows are not pushed (the leaderboard keeps its scores)")
    if pushed.commit:
        print(f"published {pushed.board} {pushed.release_id} to {pushed.url}: {len(pushed.uploaded)} of "
              f"{pushed.files} files uploaded in commit {pushed.commit[:12]}")
    else:
        print(f"published {pushed.board} {pushed.release_id} is already in {pushed.url}: nothing uploaded "
              f"({pushed.files} files unchanged)")
    for model, url in pushed.pulls.items():
        print(f"model results for {model}: pull request {url}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("publish", help="push a release to where results are shared (the Hugging Face Hub)",
                       description="Pushes a published release somewhere other people look for evaluation results.")
    kinds = p.add_subparsers(dest="target", required=True, metavar="TARGET")
    hf = kinds.add_parser(
        "hf", help="push a release to a Hugging Face Hub dataset repository",
        description="Pushes the release's leaderboard, every run's Parquet files (the same bytes) and a dataset card "
                    "made from the release to a Hub dataset repository, with huggingface_hub and its token "
                    "(HF_TOKEN or `hf auth login`). Runs of gated scenarios are left out, each named. Files already "
                    "there are not sent again.")
    hf.add_argument("board")
    hf.add_argument("--repo", required=True, metavar="ORG/NAME", help="the dataset repository (created when missing)")
    hf.add_argument("--private", action="store_true", help="create the repository private (an existing one keeps "
                                                           "its visibility)")
    hf.add_argument("--release", help="release id (default: the board's latest)")
    hf.add_argument("--model-results", action="store_true",
                    help="also open a pull request on each evaluated model's Hub repository (client huggingface) "
                         "adding its scores in the Hub's .eval_results format")
    hf.add_argument("--hub-model", action="append", default=[], metavar="DEPLOYMENT=ORG/NAME",
                    help="the Hub model repository behind a deployment (e.g. one served by vLLM); implies "
                         "--model-results (repeatable)")
    storage_arg(hf)
    hf.set_defaults(func=cmd_publish_hf)
