"""``helmflow import-helm-models prod_env/ [--to FILE]``: HELM's model configuration as a models file
(the mapping is :mod:`helmflow.helm.models`). The models file goes to ``--to`` or stdout, the report
(what could not be mapped, which variable holds which HELM key) to stderr."""

from __future__ import annotations

import argparse
import sys


def add_parser(sub) -> None:
    p = sub.add_parser(
        "import-helm-models",
        help="turn HELM's prod_env/ model_deployments.yaml and model_metadata.yaml into a helmflow models file",
        description="Convert HELM's model_deployments.yaml, model_metadata.yaml (and tokenizer_configs.yaml) in a "
                    "prod_env folder into a helmflow models file for OpenAI, Anthropic and OpenAI-compatible (vLLM, "
                    "Together) deployments, listing the entries and fields it could not map. credentials.conf is read "
                    "for key names only: each deployment names the environment variable that must hold its key.",
    )
    p.add_argument("prod_env", help="HELM's prod_env folder (or any folder holding model_deployments.yaml)")
    p.add_argument("--to", metavar="FILE",
                   help="write the models file here (default: stdout); use it with --models-file")
    p.set_defaults(func=cmd_import_helm_models)


def cmd_import_helm_models(args: argparse.Namespace) -> int:
    import yaml

    from helmflow.helm.models import convert
    from helmflow.records import Deployment

    result = convert(args.prod_env)
    for dep in result.deployments:
        Deployment.model_validate(dep)  # what we write loads as a deployment
    header = (f"# helmflow models file, imported from HELM's {args.prod_env} by `helmflow import-helm-models`.\n"
              "# Keys are not copied: export the variable each deployment names in api_key_env.\n")
    text = header + yaml.safe_dump({"deployments": result.deployments}, sort_keys=False, allow_unicode=True, width=120)
    if args.to:
        from pathlib import Path

        Path(args.to).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    err = sys.stderr
    print(f"imported {len(result.deployments)} deployment(s)" + (f" into {args.to}" if args.to else ""), file=err)
    sections = [("not imported (entry: why)", result.skipped), ("fields not mapped", result.unmapped_fields),
                ("credentials (HELM key -> the variable helmflow reads; values are never copied)", result.credentials),
                ("in model_metadata.yaml without a deployment (nothing to call)", result.metadata_only)]
    for title, lines in sections:
        if lines:
            print(f"{title}:", file=err)
            for line in lines:
                print(f"  - {line}", file=err)
    return 1 if result.skipped else 0
