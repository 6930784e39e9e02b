#!/usr/bin/env bash
# Installs everything the test suite needs (Debian packages included; run as root on Debian),
# then runs the whole suite. Extra arguments go to pytest (e.g. -m "not slow"). HELMFLOW_TEST_WORKERS=N
# runs it in N pytest-xdist workers (--dist loadgroup; each worker has its own Prefect server, database,
# moto and dev server; tests sharing a module fixture stay together); the default is 2, one per CPU of CI's
# machine, and HELMFLOW_TEST_WORKERS=0 runs it in one process.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  missing=""
  for pkg in chromium chromium-driver texlive-latex-base poppler-utils lilypond bubblewrap jekyll; do dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"; done
  if [ -n "$missing" ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
  fi
fi

# torch first, by pip and pinned: this machine holds that CPU build; an unpinned torch pulls a CUDA one
$PY -m pip install -q torch==2.13.0
$PY -m pip install -q -e ".[test,hf,heim,capabilities,lite,safety,image2struct,torr,classic,medhelm,inspect,enterprise,finance,mlflow,wandb]"

# Bytecode for the checkout, written once: where PYTHONDONTWRITEBYTECODE is set (as in many Python images) no
# process writes it, and each of the suite's hundreds of helmflow subprocesses compiled its modules again.
$PY -m compileall -q helmflow scenarios metrics clients flows tasks tests benchmarks >/dev/null || echo "compileall: some files did not compile" >&2

set +e
$PY -m pytest -n "${HELMFLOW_TEST_WORKERS:-2}" --dist loadgroup --durations=25 "$@"
rc=$?
set -e
if [ "$rc" = 5 ]; then
  echo "pytest collected no tests: that is a failure" >&2
  exit 1
fi
exit "$rc"
