#!/usr/bin/env bash
# mypy (strict, config in pyproject.toml) on metric/ and agents/corpus/search/ under their installed names.
# The folders are installed as madqa.<folder> through setuptools' package-dir mapping, which mypy cannot follow in
# an editable install; a tree of symlinks (.venv/typecheck/madqa/<folder> -> <folder>) gives it the same names.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
tree=.venv/typecheck
rm -rf "$tree" && mkdir -p "$tree/madqa"
for folder in metric agents loading_script dataset_card; do ln -s "$root/$folder" "$tree/madqa/$folder"; done
cd "$tree"
exec "$root/.venv/bin/mypy" --config-file "$root/pyproject.toml" --python-executable "$root/.venv/bin/python" \
  --cache-dir "$root/.venv/.mypy_cache" -p madqa.metric -p madqa.agents.corpus.search "$@"
