"""``helmflow import-helm``, ``import-inspect``, ``export`` and ``import``: bringing runs across from HELM and
Inspect, out to HELM and Every Eval Ever, and between stores.

The work is in :mod:`helmflow.helm` and :mod:`helmflow.bundle`, imported when a command
runs (``helmflow --help`` loads no Parquet code).

Exit codes: 0 done; 1 ``import-helm`` (``import-inspect``) skipped a run folder (a log) or found a number it does not
reproduce (everything whole was imported); 2 bad input (nothing written).
"""

from __future__ import annotations

import argparse

from helmflow.cli.options import storage_arg

EXIT_INCOMPLETE = 1


def cmd_import_helm(args: argparse.Namespace) -> int:
    from helmflow.helm.importer import import_tree
    from helmflow.storage import Store

    store = Store(args.storage)
    store.check_writable()
    report = import_tree(store, args.source, args.board)
    for run in report.runs:
        score = "n/a" if run.score is None else f"{run.score:.4f}"
        verdict = f"{len(run.checks) - len(run.mismatches)}/{len(run.checks)} of HELM's numbers reproduced"
        extra = f"; {run.perturbed} perturbed request states not imported (their stats are)" if run.perturbed else ""
        state = "imported" if run.wrote else "already imported"
        headline = f"{run.main_metric}={score}" if run.main_metric else "no accuracy metric (HELM's generic statistics)"
        print(f"{state}  {run.label} x {run.deployment}: {headline} (run {run.run_id}; {verdict}{extra})")
        for c in run.checks if args.verbose else run.mismatches:
            ours = "none" if c.helmflow is None else repr(c.helmflow)
            print(f"  {'MATCH' if c.equal else 'MISMATCH'} {c.metric} [{c.split}]: HELM {c.helm!r}, helmflow {ours}")
    for s in report.skipped:
        print(f"skipped   {s.where}: {s.why}")
    if report.release_id:
        print(f"release   {args.board} {report.release_id}: {report.release_uri}")
    mismatched = sum(1 for r in report.runs if r.mismatches)
    print(f"{len(report.runs)} run(s) imported into {store.root}, {len(report.skipped)} skipped, "
          f"{mismatched} with numbers helmflow does not reproduce")
    return 0 if report.ok else EXIT_INCOMPLETE


def cmd_import_inspect(args: argparse.Namespace) -> int:
    from helmflow.helm.inspect_logs import import_logs
    from helmflow.storage import Store

    store = Store(args.storage)
    store.check_writable()
    report = import_logs(store, args.source, args.board)
    for run in report.runs:
        score = "n/a" if run.score is None else f"{run.score:.4f}"
        verdict = f"{len(run.checks) - len(run.mismatches)}/{len(run.checks)} of Inspect's numbers reproduced"
        state = "imported" if run.wrote else "already imported"
        print(f"{state}  {run.label} x {run.deployment}: {run.main_metric}={score} (run {run.run_id}; {verdict})")
        for c in run.checks if args.verbose else run.mismatches:
            ours = "none" if c.helmflow is None else repr(c.helmflow)
            print(f"  {'MATCH' if c.equal else 'MISMATCH'} {c.metric}: Inspect {c.helm!r}, helmflow {ours}")
    for s in report.skipped:
        print(f"skipped   {s.where}: {s.why}")
    if report.release_id:
        print(f"release   {args.board} {report.release_id}: {report.release_uri}")
    mismatched = sum(1 for r in report.runs if r.mismatches)
    print(f"{len(report.runs)} log(s) imported into {store.root}, {len(report.skipped)} skipped, "
          f"{mismatched} with numbers helmflow does not reproduce")
    return 0 if report.ok else EXIT_INCOMPLETE


def cmd_export(args: argparse.Namespace) -> int:
    from helmflow.bundle import export_bundle, pick_release, release_runs
    from helmflow.helm.export import export_helm
    from helmflow.storage import Store

    store, dest = Store(args.storage), Store(args.to)
    if dest.root == store.root:
        from helmflow.errors import HelmflowError

        raise HelmflowError(f"--to {args.to} is the storage root itself; export into another folder or bucket")
    dest.check_writable()
    if args.format == "helm":
        info = pick_release(store, args.board, args.release)
        folders = export_helm(store, release_runs(store, info), dest)
        print(f"exported {len(folders)} run(s) of {info.board} {info.release_id} as HELM run folders to {dest.root}")
        print(f"read them back with: helmflow import-helm {dest.root}")
        return 0
    if args.format == "every-eval-ever":
        from helmflow.helm.every_eval_ever import SCHEMA_VERSION, export_every_eval_ever

        info = pick_release(store, args.board, args.release)
        files = export_every_eval_ever(store, info, release_runs(store, info), dest, args.organization,
                                       args.relationship)
        results = sum(len(f.record["evaluation_results"]) for f in files)
        print(f"exported {info.board} {info.release_id} in the Every Eval Ever schema {SCHEMA_VERSION}: "
              f"{len(files)} model file(s), {results} results under {dest.url('data')}")
        return 0
    out = export_bundle(store, args.board, args.release, dest)
    print(f"exported {out.board} {out.release_id}: {out.runs} run(s), {out.files} files, "
          f"{out.bytes:,} bytes to {out.uri}")
    print(f"import it elsewhere with: helmflow import {out.uri} --storage OTHER_ROOT")
    return 0


def cmd_import(args: argparse.Namespace) -> int:
    from helmflow.bundle import import_bundle
    from helmflow.storage import Store

    store = Store(args.storage)
    store.check_writable()
    out = import_bundle(Store(args.bundle), store, overwrite=args.overwrite)
    print(f"imported {out.board} {out.release_id}: {out.runs} run(s), {out.bytes:,} bytes written into {out.uri}")
    return 0


def add_parser(sub: argparse._SubParsersAction) -> None:
    helm = sub.add_parser(
        "import-helm", help="import HELM's runs (benchmark_output/runs/SUITE, local or any fsspec URL)",
        description="Reads each HELM run folder (run_spec.json, scenario_state.json, stats.json, "
                    "per_instance_stats.json, instances.json) and writes it as a run here, versions marked "
                    "imported, HELM's numbers kept and recomputed where helmflow has the same metric. "
                    "Folders that are not whole are skipped and listed (exit 1); nothing half-written.")
    helm.add_argument("source", help="a HELM suite folder (benchmark_output/runs/SUITE), one run folder, "
                                     "or an fsspec URL (s3://, gs://, https://) to one")
    helm.add_argument("--board", help="also publish the imported runs as a release of this board (imports accumulate)")
    helm.add_argument("-v", "--verbose", action="store_true",
                      help="one line per recomputed stat: MATCH or MISMATCH with HELM's number and helmflow's "
                           "(without it, only the mismatches)")
    storage_arg(helm)
    helm.set_defaults(func=cmd_import_helm)

    ins = sub.add_parser(
        "import-inspect", help="import Inspect AI eval logs (.eval or .json; a file or a folder, local or fsspec URL)",
        description="Reads each log with Inspect's own reader (the inspect extra) and writes it as a run here: "
                    "samples as instances and completions, scores as stats, the task, model and scorers as the "
                    "run's versions, marked imported from Inspect. Inspect's numbers are kept and recomputed "
                    "where helmflow has the same metric. Logs that are not whole are skipped and listed (exit 1).")
    ins.add_argument("source", help="an Inspect log file (.eval or .json) or a folder of them (e.g. ./logs)")
    ins.add_argument("--board", help="also publish the imported runs as a release of this board (imports accumulate)")
    ins.add_argument("-v", "--verbose", action="store_true",
                     help="one line per recomputed number: MATCH or MISMATCH with Inspect's and helmflow's")
    storage_arg(ins)
    ins.set_defaults(func=cmd_import_inspect)

    exp = sub.add_parser(
        "export", help="write a release and every run behind it as a self-contained bundle (or as HELM run folders)",
        description="A bundle holds the release, its runs, their instances, a manifest with sha256 checksums "
                    "and the JSON Schemas of run.json and release.json; `helmflow import` reads it into another "
                    "storage root.")
    exp.add_argument("board")
    exp.add_argument("--release", help="release id (default: the board's latest)")
    exp.add_argument("--to", required=True, metavar="DIR_OR_URL", help="where to write: a folder or s3://bucket/prefix")
    exp.add_argument("--format", choices=("helmflow", "helm", "every-eval-ever"), default="helmflow",
                     help="helmflow: a bundle (default); helm: HELM-shaped run folders (run_spec.json, stats.json, "
                          "per_instance_stats.json, scenario_state.json, instances.json); every-eval-ever: one "
                          "JSON file per model in the Every Eval Ever schema 0.2.2, under "
                          "data/<board>/<developer>/<model>/")
    exp.add_argument("--organization", default="unknown",
                     help="every-eval-ever: source_organization_name, who ran the evaluation (default: unknown)")
    exp.add_argument("--relationship", default="third_party",
                     choices=("first_party", "third_party", "collaborative", "other"),
                     help="every-eval-ever: evaluator_relationship to the models (default: third_party)")
    storage_arg(exp)
    exp.set_defaults(func=cmd_export)

    imp = sub.add_parser("import", help="import a bundle written by `helmflow export` into this storage root",
                         description="Checks every file against the bundle's sha256 first, then writes runs before "
                                     "the release and the release before the board's pointer.")
    imp.add_argument("bundle", help="the bundle's folder or URL")
    imp.add_argument("--overwrite", action="store_true",
                     help="replace files this storage root already holds with other bytes (default: refuse, naming "
                          "the file: a run id or instance key is a content address)")
    storage_arg(imp)
    imp.set_defaults(func=cmd_import)
