"""agents/corpus/embeddings.py: real wordllama vectors (offline, from its wheel), the spec errors, the
sentence-transformers
wrapper (on a stand-in model here; on a tiny random model when the package is installed)."""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from helpers.one_line_errors import one_line_error
from helpers.tiny_bert import tiny_bert

from madqa.agents.corpus.embeddings import (
    Embedder,
    EmbedderSpecError,
    SentenceTransformerEmbedder,
    make_embedder,
)
from madqa.agents.harness.deps import MissingDependencyError

SENTENCES = [
    "The cat sat on the mat.",
    "A kitten is sitting on a rug.",
    "Quarterly revenue rose by five percent in the third fiscal quarter.",
    "The company's sales grew 5% in Q3.",
    "How do I bake sourdough bread at home?",
]


def cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


@pytest.fixture(scope="module")
def wl() -> Embedder:
    return make_embedder("wordllama")


def test_shape_dtype_and_unit_norm(wl: Embedder) -> None:
    v = wl.embed(SENTENCES)
    assert isinstance(wl, Embedder)
    assert (wl.name, wl.dim) == ("wordllama:256", 256)
    assert wl.cache_key.startswith("wordllama:256@wordllama-")
    assert v.shape == (5, 256) and v.dtype == np.float32
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert wl.embed([]).shape == (0, 256)


def test_similar_sentences_are_closer_than_unrelated_ones(wl: Embedder) -> None:
    cat, kitten, revenue, sales, bread = wl.embed(SENTENCES)
    assert cos(cat, kitten) > cos(cat, revenue) + 0.2
    assert cos(cat, kitten) > cos(cat, bread)
    assert cos(revenue, sales) > cos(revenue, cat)
    assert cos(revenue, sales) > cos(revenue, bread)


def test_deterministic_and_independent_of_batching(wl: Embedder) -> None:
    a = wl.embed(SENTENCES)
    b = make_embedder("wordllama").embed(SENTENCES, batch_size=2, progress=False)
    c = np.vstack([wl.embed([s]) for s in SENTENCES])
    assert np.array_equal(a, wl.embed(SENTENCES))
    assert np.allclose(a, b, atol=1e-6) and np.allclose(a, c, atol=1e-6)


def test_default_batch_is_64_texts_and_gives_the_vectors_of_any_other_batch(wl: Embedder) -> None:
    """Issue 47: 64 texts per wordllama call is 1.2-2.4x faster than 256 on pages of mixed length (the padding to the
    longest text of a batch); it must not change a single bit of the vectors."""
    from madqa.agents.corpus.embeddings import WORDLLAMA_BATCH

    rng = np.random.default_rng(0)
    words = " ".join(SENTENCES).split()
    texts = [" ".join(rng.choice(words, size=int(n))) for n in rng.integers(1, 400, size=300)]
    model = wl._model  # type: ignore[attr-defined]
    calls: list[int] = []
    real_embed = model.embed
    model.embed = lambda chunk, **kw: calls.append(len(chunk)) or real_embed(chunk, **kw)
    try:
        default = wl.embed(texts)
    finally:
        del model.embed
    assert WORDLLAMA_BATCH == 64 and calls == [64, 64, 64, 64, 44]
    for size in (1, 32, 256, 300):
        assert np.array_equal(wl.embed(texts, batch_size=size), default), size


def test_progress_bar_counts_texts(wl: Embedder, capsys: pytest.CaptureFixture[str]) -> None:
    wl.embed(SENTENCES, batch_size=2, progress=True)
    err = capsys.readouterr().err
    assert "wordllama:256" in err and "5/5" in err


def test_empty_text_is_a_zero_vector_not_nan(wl: Embedder) -> None:
    v = wl.embed(["", "some words"])
    assert np.all(v[0] == 0) and np.isfinite(v).all()
    assert np.linalg.norm(v[1]) == pytest.approx(1.0, abs=1e-5)


def test_truncated_dims_are_matryoshka_prefixes(wl: Embedder) -> None:
    full = wl.embed(SENTENCES)
    for dim in (64, 128):
        small = make_embedder(f"wordllama:{dim}")
        v = small.embed(SENTENCES)
        assert (small.name, small.dim, v.shape) == (f"wordllama:{dim}", dim, (5, dim))
        prefix = full[:, :dim] / np.linalg.norm(full[:, :dim], axis=1, keepdims=True)
        assert np.allclose(v, prefix, atol=1e-5)
        assert cos(v[0], v[1]) > cos(v[0], v[2])
    assert make_embedder("wordllama:256").name == "wordllama:256"


def test_matches_the_wordllama_library(wl: Embedder) -> None:
    import wordllama
    from wordllama import WordLlama

    # WordLlama.load looks for the bundled tokenizer under "tokenizer/" (the wheel has "tokenizers/"): pointing
    # its cache at the package folder makes it find both bundled files without a download.
    ref = WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)
    assert np.allclose(wl.embed(SENTENCES), ref.embed(SENTENCES, norm=True), atol=1e-6)


def test_root_logger_is_left_alone() -> None:
    code = (
        "import logging\n"
        "from madqa.agents.corpus.embeddings import make_embedder\n"
        "make_embedder('wordllama').embed(['x'])\n"
        "root = logging.getLogger()\n"
        "print(len(root.handlers), root.level)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.split() == ["0", str(logging.WARNING)]


def test_import_loads_nothing_heavy() -> None:
    code = (
        "import sys\n"
        "import madqa.agents.corpus.embeddings\n"
        "print(sorted(m for m in ('wordllama', 'sentence_transformers', 'torch', 'tokenizers', 'safetensors', 'tqdm')"
        " if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"


GUARD = r"""
import json, socket, sys
attempts = []
def blocked(*args, **kwargs):
    attempts.append(repr(args[:2]))
    raise OSError("network blocked by test_embeddings")
socket.getaddrinfo = blocked
socket.create_connection = blocked
socket.socket.connect = lambda self, address: blocked(address)
from madqa.agents.corpus.embeddings import make_embedder
v = make_embedder(sys.argv[1]).embed(["offline sentence one", "offline sentence two"])
print(json.dumps({"shape": list(v.shape), "attempts": attempts}))
"""


@pytest.mark.parametrize("spec", ["wordllama", "wordllama:64"])
def test_wordllama_makes_no_network_call(tmp_path: Path, spec: str) -> None:
    # No offline flags, an empty HOME (so no ~/.cache/wordllama), and every socket refused and recorded.
    env = {k: v for k, v in os.environ.items() if not k.endswith("_OFFLINE")}
    env["HOME"] = str(tmp_path)
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    proc = subprocess.run([sys.executable, "-c", GUARD, spec], capture_output=True, text=True, env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result == {"shape": [2, int(spec.partition(":")[2] or 256)], "attempts": []}
    assert not (tmp_path / ".cache" / "wordllama").exists()


@pytest.mark.parametrize(
    ("spec", "needle"),
    [
        ("nope", "unknown embedder 'nope'"),
        ("dense:wordllama", "unknown embedder 'dense:wordllama'"),
        ("wordllama:512", "dimensions 64, 128, 256"),
        ("wordllama:abc", "embedder 'wordllama:abc'"),
        ("st:", "name a model"),
    ],
)
def test_bad_specs_are_one_line_errors(spec: str, needle: str) -> None:
    assert needle in one_line_error(EmbedderSpecError, make_embedder, spec)


def test_wordllama_is_cpu_only() -> None:
    with pytest.raises(EmbedderSpecError, match="CPU only"):
        make_embedder("wordllama", device="cuda")


def test_missing_package_names_the_spec_and_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    from madqa.agents.corpus import embeddings

    real = importlib.util.find_spec
    hide = embeddings.EXTRAS
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in hide else real(name, *a))
    for spec, extra in [
        ("wordllama:128", "madqa[embed]"),
        ("st:some/model", "madqa[sentence-transformers]"),
        ("sentence-transformers:x", "madqa[sentence-transformers]"),
    ]:
        with pytest.raises(MissingDependencyError) as err:
            make_embedder(spec)
        message = str(err.value)
        assert extra in message and "\n" not in message
        assert f"embedder {spec!r}" in message


class StandInModel:
    """Duck-typed ``SentenceTransformer``: un-normalised vectors from character counts, records its batches."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def get_sentence_embedding_dimension(self) -> int:
        return 3

    def encode(self, texts: list[str], **kwargs: object) -> np.ndarray:
        self.calls.append(list(texts))
        return np.array([[t.count("a"), t.count("b"), 2 * t.count("c")] for t in texts], dtype=np.float64)


def test_sentence_transformer_wrapper_normalises_and_batches() -> None:
    model = StandInModel()
    emb = SentenceTransformerEmbedder(model, "local/folder", "9.9")
    assert isinstance(emb, Embedder)
    assert (emb.name, emb.dim, emb.cache_key) == ("st:local/folder", 3, "st:local/folder@sentence-transformers-9.9")
    v = emb.embed(["aa", "b", "", "abc", "cc"], batch_size=2)
    assert [len(c) for c in model.calls] == [2, 2, 1]
    assert v.dtype == np.float32 and v.shape == (5, 3)
    assert np.allclose(v[0], [1, 0, 0]) and np.all(v[2] == 0)
    assert np.allclose(np.linalg.norm(v[[0, 1, 3, 4]], axis=1), 1.0)
    with pytest.raises(TypeError, match="not one string"):
        emb.embed("aa")


@pytest.mark.skipif(
    importlib.util.find_spec("sentence_transformers") is None,
    reason="sentence-transformers is not installed (extra `sentence-transformers`; it pulls torch, so the test "
    "install leaves it out)",
)
def test_tiny_random_sentence_transformer_from_a_local_folder(tmp_path: Path) -> None:
    import sentence_transformers
    from transformers import BertTokenizerFast

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "dog", "sat", "revenue", "rose", "mat"]
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    hf = tmp_path / "hf"
    BertTokenizerFast(vocab_file=str(tmp_path / "vocab.txt")).save_pretrained(hf)
    tiny_bert(len(vocab), hidden_size=16, layers=1).save_pretrained(hf)  # randomly initialised
    word = sentence_transformers.models.Transformer(str(hf))
    pooling = sentence_transformers.models.Pooling(word.get_word_embedding_dimension())
    folder = tmp_path / "st"
    sentence_transformers.SentenceTransformer(modules=[word, pooling], device="cpu").save(str(folder))

    emb = make_embedder(f"st:{folder}", device="cpu")
    v = emb.embed(["the cat sat", "the dog sat", "revenue rose"], batch_size=2)
    assert (emb.dim, v.shape, v.dtype) == (16, (3, 16), np.float32)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    assert np.allclose(v, emb.embed(["the cat sat", "the dog sat", "revenue rose"]), atol=1e-5)
    assert make_embedder(f"sentence-transformers:{folder}", device="cpu").embed(["the cat sat"]).shape == (1, 16)
