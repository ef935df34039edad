"""Text embeddings: the one home for every embedding the project computes (drift, semantic distance, dense retrieval).

``make_embedder(spec)`` turns a spec into an :class:`Embedder`:

* ``wordllama`` (the default): the ``wordllama`` package's ``l2_supercat`` static token embeddings, 256
  dimensions. Its weights and tokenizer ship inside its PyPI wheel, so it runs offline: both are read from the
  installed package's folder, never downloaded (a missing file is an error).
* ``wordllama:DIM``: the same model truncated to its first ``DIM`` dimensions (Matryoshka-trained), ``DIM`` in
  64, 128 or 256 (the sizes the wheel ships; 512 and 1024 would need a download and are refused).
* ``st:MODEL`` or ``sentence-transformers:MODEL``: a sentence-transformers model, by Hub id or local folder
  (the ``sentence-transformers`` package, installed separately: it pulls torch).

Every embedder returns a float32 array of shape ``(n, d)`` whose rows have unit L2 norm, so a dot product is the
cosine similarity. A text with no tokens (e.g. ``""``) embeds to the zero vector (similarity 0 with everything)
rather than NaN. Texts are embedded in batches; ``progress=True`` shows a tqdm bar over them. Nothing heavy is
imported before an embedder is made, and loaded models are kept (per spec and device) for reuse in the process.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from collections.abc import Iterator, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from madqa.agents.harness.deps import MissingDependencyError

FloatArray = npt.NDArray[np.float32]

DEFAULT_SPEC = "wordllama"
#: Dimensions of ``wordllama``'s bundled ``l2_supercat`` weights (shipped at 256; Matryoshka prefixes of it).
WORDLLAMA_DIMS = (64, 128, 256)
WORDLLAMA_CONFIG = "l2_supercat"
#: Texts per ``wordllama`` call. Its token matrix is padded to the batch's longest text, so big batches of pages of
#: mixed length do wasted work: alternated on 2,000 sample pages (``madqa bench retrieval``'s English corpus, 5
#: repeats, load 14-17), 256 took 2.41x (2.24-3.24x) the time of 64, 128 1.63x, 32 0.94x (0.75-1.45x); the vectors
#: are identical at every size (tests/agents/corpus/test_embeddings.py).
WORDLLAMA_BATCH = 64
SPEC_HELP = (
    "wordllama (default, offline), wordllama:DIM (DIM in 64, 128, 256), "
    "st:MODEL or sentence-transformers:MODEL (a Hub id or a local folder)"
)
#: pip extra -> what it installs, for the error messages.
EXTRAS = {
    "wordllama": ("embed", "wordllama"),
    "sentence_transformers": ("sentence-transformers", "sentence-transformers"),
}


class EmbedderSpecError(ValueError):
    """An embedder spec that names no known embedder (or an unsupported setting of one)."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-norm vectors.

    Attributes:
        name: the canonical spec (``wordllama:256``, ``st:all-MiniLM-L6-v2``): reproduces this embedder.
        dim: the vector size ``d``.
        cache_key: ``name`` plus the library version: the key of anything cached from these vectors.
    """

    name: str
    dim: int
    cache_key: str

    def embed(self, texts: Sequence[str], *, batch_size: int | None = None, progress: bool = False) -> FloatArray:
        """Embed ``texts`` into a float32 ``(len(texts), dim)`` array of unit-norm rows (zero rows for empty texts)."""
        ...


def make_embedder(spec: str = DEFAULT_SPEC, *, device: str | None = None) -> Embedder:
    """The embedder of ``spec`` (see the module docstring for the specs).

    Args:
        spec: ``wordllama``, ``wordllama:DIM``, ``st:MODEL`` or ``sentence-transformers:MODEL``.
        device: for sentence-transformers models: ``cpu``, ``cuda``, ``cuda:1``... (default: its own choice).
            ``wordllama`` always runs on the CPU (it is a table lookup and a mean).

    Returns:
        An :class:`Embedder`; the loaded model is reused by later calls with the same spec and device.

    Raises:
        EmbedderSpecError: an unknown spec, or a setting the embedder does not support.
        MissingDependencyError: the spec's package is not installed (the message names the pip extra).
    """
    kind, _, arg = spec.strip().partition(":")
    kind = kind.lower()
    if kind == "wordllama":
        if device not in (None, "cpu"):
            raise EmbedderSpecError(f"embedder {spec!r}: wordllama runs on the CPU only (got device {device!r})")
        dim = _wordllama_dim(spec, arg)
        _require("wordllama", spec)
        return _wordllama(dim)
    if kind in ("st", "sentence-transformers", "sentence_transformers"):
        if not arg.strip():
            raise EmbedderSpecError(f"embedder {spec!r}: name a model, e.g. st:sentence-transformers/all-MiniLM-L6-v2")
        _require("sentence_transformers", spec)
        return _sentence_transformer(arg.strip(), device)
    raise EmbedderSpecError(f"unknown embedder {spec!r}: use {SPEC_HELP}")


def _wordllama_dim(spec: str, arg: str) -> int:
    if not arg:
        return WORDLLAMA_DIMS[-1]
    if not arg.isdigit() or int(arg) not in WORDLLAMA_DIMS:
        dims = ", ".join(map(str, WORDLLAMA_DIMS))
        raise EmbedderSpecError(
            f"embedder {spec!r}: the bundled wordllama weights have dimensions {dims} (a prefix of 256); "
            "larger ones would need a download"
        )
    return int(arg)


def _require(module: str, spec: str) -> None:
    if importlib.util.find_spec(module) is None:
        extra, packages = EXTRAS[module]
        raise MissingDependencyError(
            f"embedder {spec!r} needs the Python package '{packages}', which is not installed: "
            f"pip install 'madqa[{extra}]' (or: pip install {packages})"
        )


def _batches(texts: Sequence[str], size: int, progress: bool, desc: str) -> Iterator[tuple[int, list[str]]]:
    """``(start, chunk)`` pairs over ``texts``, with a tqdm bar counting texts when ``progress``."""
    from tqdm.auto import tqdm

    with tqdm(total=len(texts), desc=desc, unit="text", disable=not progress) as bar:
        for start in range(0, len(texts), size):
            chunk = [str(t) for t in texts[start : start + size]]
            yield start, chunk
            bar.update(len(chunk))


def _unit_rows(x: npt.NDArray[Any]) -> FloatArray:
    """Rows scaled to unit L2 norm (zero rows stay zero), as float32."""
    out = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    result: FloatArray = np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)
    return result


def _check_texts(texts: Sequence[str]) -> None:
    if isinstance(texts, str):
        raise TypeError("embed() takes a sequence of texts, not one string (wrap it in a list)")


class WordLlamaEmbedder:
    """``wordllama``'s bundled ``l2_supercat`` model (mean-pooled static token embeddings), offline."""

    def __init__(self, model: Any, dim: int, version: str) -> None:
        """Wrap a loaded ``WordLlamaInference`` truncated to ``dim`` dimensions."""
        self._model = model
        self.dim = dim
        self.name = f"wordllama:{dim}"
        self.cache_key = f"{self.name}@wordllama-{version}/{WORDLLAMA_CONFIG}"

    def embed(self, texts: Sequence[str], *, batch_size: int | None = None, progress: bool = False) -> FloatArray:
        """Embed ``texts`` (batches of ``batch_size``, default :data:`WORDLLAMA_BATCH`)."""
        _check_texts(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for start, chunk in _batches(texts, batch_size or WORDLLAMA_BATCH, progress, self.name):
            raw = self._model.embed(chunk, norm=False, batch_size=len(chunk))
            out[start : start + len(chunk)] = _unit_rows(raw)
        return out


class SentenceTransformerEmbedder:
    """A sentence-transformers model (Hub id or local folder)."""

    def __init__(self, model: Any, model_name: str, version: str) -> None:
        """Wrap a loaded ``SentenceTransformer``."""
        self._model = model
        dim = getattr(model, "get_sentence_embedding_dimension", lambda: None)()
        self.dim = int(dim) if dim else int(model.encode(["x"]).shape[1])
        self.name = f"st:{model_name}"
        self.cache_key = f"{self.name}@sentence-transformers-{version}"

    def embed(self, texts: Sequence[str], *, batch_size: int | None = None, progress: bool = False) -> FloatArray:
        """Embed ``texts`` (batches of ``batch_size``, default 32)."""
        _check_texts(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        size = batch_size or 32
        for start, chunk in _batches(texts, size, progress, self.name):
            raw = self._model.encode(chunk, batch_size=size, convert_to_numpy=True, show_progress_bar=False)
            out[start : start + len(chunk)] = _unit_rows(raw)
        return out


@lru_cache(maxsize=4)
def _wordllama(dim: int) -> WordLlamaEmbedder:
    # wordllama calls logging.basicConfig(level=INFO) when imported; keep the root logger as the caller set it.
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        import wordllama
        from wordllama import WordLlamaInference
    finally:
        for h in root.handlers[:]:
            if h not in handlers:
                root.removeHandler(h)
        root.setLevel(level)
    return WordLlamaEmbedder(
        WordLlamaInference(_wordllama_table(wordllama.__file__, dim), _wordllama_tokenizer(wordllama.__file__)),
        dim,
        str(wordllama.__version__),
    )


def _wordllama_files(package_file: str) -> tuple[Path, Path]:
    """The wheel's weights and tokenizer files of :data:`WORDLLAMA_CONFIG`.

    Read from the package folder directly, not through ``WordLlama.load``: in wordllama 0.4.0.post1 that looks for
    the bundled tokenizer under ``tokenizer/`` while the wheel ships it under ``tokenizers/``, so it downloads the
    tokenizer from the Hub on first use (or fails with downloads disabled).
    """
    folder = Path(package_file).parent
    weights = folder / "weights" / f"{WORDLLAMA_CONFIG}_{WORDLLAMA_DIMS[-1]}.safetensors"
    tokenizer = folder / "tokenizers" / f"{WORDLLAMA_CONFIG}_tokenizer_config.json"
    for path in (weights, tokenizer):
        if not path.is_file():
            raise FileNotFoundError(
                f"embedder 'wordllama': the wordllama package lacks its bundled {path} "
                "(reinstall it: pip install 'madqa[embed]')"
            )
    return weights, tokenizer


def _wordllama_table(package_file: str, dim: int) -> npt.NDArray[np.float32]:
    """The token embedding table, its first ``dim`` columns."""
    from safetensors import safe_open

    with safe_open(str(_wordllama_files(package_file)[0]), framework="np", device="cpu") as f:
        table = f.get_tensor("embedding.weight")
    return np.ascontiguousarray(table[:, :dim], dtype=np.float32)


def _wordllama_tokenizer(package_file: str) -> Any:
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(_wordllama_files(package_file)[1]))


@lru_cache(maxsize=4)
def _sentence_transformer(model_name: str, device: str | None) -> SentenceTransformerEmbedder:
    import sentence_transformers

    source = os.path.expanduser(model_name)
    model = sentence_transformers.SentenceTransformer(source if os.path.isdir(source) else model_name, device=device)
    return SentenceTransformerEmbedder(model, model_name, str(sentence_transformers.__version__))
