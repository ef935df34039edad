#!/usr/bin/env bash
# The MTEB tasks' tests (tests/agents/integrations/test_mteb_task.py) in an environment of their own, with mteb:
#   bash scripts/mteb_check.sh [VENV]          (default VENV: .venv-mteb at the repo root)
# The test profile (.venv, scripts/bootstrap.sh) leaves mteb out: it would install beside the project's pins without
# changing any (pip's dry run, mteb 2.26.24), but it adds about 330 MB (polars, scikit-learn, sentence-transformers,
# mteb itself) on top of torch; without it those tests skip, saying so. This builds VENV once (torch's CPU build, as
# bootstrap installs it, then madqa[test,embed,retrieval,late,mteb]), then runs the file with the slow tests,
# offline. Extra arguments go to pytest (e.g. -k text_task).
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${1:-.venv-mteb}"
shift || true
PYTHON="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
  echo "mteb_check: creating $venv" >&2
  "$PYTHON" -m venv "$venv"
fi
if ! "$venv/bin/python" -c 'import mteb, madqa.cli' 2>/dev/null; then
  echo "mteb_check: installing torch 2.13.0 (CPU build) and madqa[test,embed,retrieval,late,mteb] into $venv" >&2
  "$venv/bin/python" -m pip install -q --disable-pip-version-check torch==2.13.0
  "$venv/bin/python" -m pip install -q --disable-pip-version-check -e ".[test,embed,retrieval,late,mteb]"
fi
HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 exec "$venv/bin/python" -m pytest -q -p no:cacheprovider -m "" \
  tests/agents/integrations/test_mteb_task.py "$@"
