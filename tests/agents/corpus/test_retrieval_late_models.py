"""The real encoders of ``colbert:``, ``dse:`` and ``colpali:`` (agents/corpus/retrieval/encoders.py, qwenvl.py) on
tiny
randomly initialised models built here from ``transformers`` configs, saved with ``save_pretrained`` into a
temporary folder and loaded back through the spec strings (``colbert:/tmp/…``), fully offline (no Hub).

* ``colbert:``: a 2-layer BERT (hidden 32) with a word-level tokenizer written here, and ColBERTv2's
  ``linear.weight`` projection (32 → 16) in its own safetensors file.
* ``dse:``: a 2-layer Qwen2-VL (text hidden 32, a 1-block vision tower) with a byte-level BPE tokenizer written
  here and the Qwen2-VL image processor (its PIL backend: no torchvision).
* ``colpali:``: ColQwen2.5 (a 2-layer Qwen2.5-VL plus ``custom_text_proj`` to 128) the same way.

Checked: output shapes and norms, that a batch of 4 gives the vectors of 4 batches of 1, the on-disk page-vector
cache (a second build never calls the model; model, settings and page content each change the key), MaxSim
re-ranking in ``hybrid:`` (HEAVEN's weighting included), ``rrf:`` fusion, and on text a page whose text is the
query ranking first. With random weights an image page's rank says nothing, so the image retrievers' scores are
checked against MaxSim recomputed here from the encoders' own vectors instead.
"""

from __future__ import annotations

import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from helpers.tiny_models import (
    IMAGE_PIXELS,
    ORIGINAL,
    PAGES,
    WORDS,
    Renderer,
    colbert_folder,
    qwen_folder,
    torch,
)
from PIL import Image

from madqa.agents.corpus.retrieval import encoders  # noqa: E402
from madqa.agents.corpus.retrieval.base import RetrievalError  # noqa: E402
from madqa.agents.corpus.retrieval.fusion import HybridRetriever, RRFRetriever  # noqa: E402
from madqa.agents.corpus.retrieval.late import VectorRetriever  # noqa: E402
from madqa.agents.corpus.retrieval.qwenvl import QwenVLInputs  # noqa: E402
from madqa.agents.corpus.retrieval.spec import make_retriever, make_retrievers  # noqa: E402
from madqa.agents.corpus.retrieval.vectors import maxsim  # noqa: E402


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny-models")
    return {
        "colbert": colbert_folder(root),
        "colbert-other": colbert_folder(root, seed=1),
        "dse": qwen_folder(root, "qwen2"),
        "colpali": qwen_folder(root, "qwen2.5"),
    }


def spec_of(kind: str, models: dict[str, Path], extra: str = "") -> str:
    pixels = {"dse": ":min_pixels=784:max_pixels=3136", "colpali": ":max_visual_tokens=4"}.get(kind, "")
    return f"{kind}:{models[kind]}{pixels}:device=cpu{extra}"


@pytest.fixture()
def renderer(tmp_path: Path) -> Renderer:
    (tmp_path / "pdfs").mkdir()
    return Renderer(tmp_path / "pdfs")


class ModelCalls:
    """Counts forward calls of any torch module while active (a global forward hook)."""

    def __init__(self) -> None:
        self.calls = 0

    def __enter__(self) -> ModelCalls:
        def hook(*_: Any) -> None:
            self.calls += 1

        self._handle = torch.nn.modules.module.register_module_forward_hook(hook)
        return self

    def __exit__(self, *_: Any) -> None:
        self._handle.remove()


def build(spec: str, tmp_path: Path, renderer: Renderer | None, pages: list[dict[str, Any]] = PAGES) -> Any:
    return make_retriever(spec, pages, cache_dir=tmp_path / "vec", index_dir=tmp_path / "ix", renderer=renderer)


@pytest.mark.slow
def test_colbert_vectors_follow_colbertv2(models: dict[str, Path]) -> None:
    enc = encoders.ColBERTEncoder(str(models["colbert"]), device="cpu", doc_length=64)
    assert enc.projection is not None and tuple(enc.projection.shape) == (16, 32)  # linear.weight was found
    ids = enc.tokenizer([p["text"] for p in PAGES])["input_ids"]
    assert enc.tokenizer.unk_token_id not in {i for row in ids for i in row}  # the vocabulary was written and read
    assert (enc.q_marker, enc.d_marker) == (1, 2)  # [unused0], [unused1]
    queries = enc.encode_queries(["penguins eat herring", "night train"])
    assert [q.shape for q in queries] == [(32, 16), (32, 16)]  # padded with [MASK] to query_length, all kept
    pages = enc.encode_pages(["penguins eat herring at the zoo.", "income tax"])
    assert [p.shape for p in pages] == [(9, 16), (5, 16)]  # [CLS] [unused1] words [SEP]; the "." is skipped
    for vectors in [*queries, *pages]:
        assert vectors.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    short = encoders.ColBERTEncoder(str(models["colbert"]), device="cpu", query_length=8, doc_length=5)
    assert short.encode_queries(["penguins"])[0].shape == (8, 16)
    assert short.encode_pages(["penguins eat herring at the zoo"])[0].shape == (5, 16)  # cut at doc_length
    assert short.cache_key != enc.cache_key
    default = encoders.ColBERTEncoder(str(models["colbert"]), device="cpu")  # doc_length 512 > 128 positions
    assert default.doc_length == 128 and "|d128|" in default.cache_key
    assert default.encode_pages([" ".join(WORDS * 20)])[0].shape == (128, 16)


def test_qwen_inputs_expand_the_image_token_per_merged_patch(models: dict[str, Path]) -> None:
    inputs = QwenVLInputs.load(str(models["dse"]), **IMAGE_PIXELS)
    images = [Image.new("RGB", (60, 80)), Image.new("RGB", (20, 20))]
    batch = inputs(["a <|image_pad|> b", "<|image_pad|>"], images)
    grid = batch["image_grid_thw"].tolist()
    assert grid == [[1, 4, 2], [1, 2, 2]]  # (t, h, w) patches of 14 px, area bounded by max_pixels
    image_tokens = batch["mm_token_type_ids"].sum(dim=1).tolist()
    assert image_tokens == [8 // 4, 4 // 4] and (batch["input_ids"] == inputs.image_token_id).sum() == 3
    assert batch["attention_mask"][1, 0] == 0 and batch["attention_mask"][:, -1].all()  # left padding
    with pytest.raises(ValueError, match="one <|image_pad|> per image"):
        inputs(["no image token"], images[:1])


def test_image_encoders_shapes(models: dict[str, Path], renderer: Renderer) -> None:
    dse = encoders.DSEEncoder(str(models["dse"]), device="cpu", **IMAGE_PIXELS)
    cut = encoders.DSEEncoder(str(models["dse"]), device="cpu", dim=8, **IMAGE_PIXELS)
    col = encoders.ColPaliEncoder(str(models["colpali"]), device="cpu", max_visual_tokens=4)
    assert type(col.model).__name__ == "ColQwen2_5" and col.arch == "colqwen2.5"
    pages = [renderer.image(p["document"], p["page"]) for p in PAGES[:2]]
    assert [v.shape for v in dse.encode_pages(pages)] == [(1, 32), (1, 32)]  # one vector: the last hidden state
    assert [v.shape for v in cut.encode_pages(pages)] == [(1, 8), (1, 8)]  # Matryoshka cut to dim
    assert [v.shape for v in dse.encode_queries(["night train", "tax"])] == [(1, 32), (1, 32)]
    col_pages = col.encode_pages(pages)
    prompt = len(col.processor.tokenizer(encoders_prompt())["input_ids"]) - 1  # the prompt less its <|image_pad|>
    grids = col.processor.image_processor(images=pages, return_tensors="pt")["image_grid_thw"]
    assert [v.shape for v in col_pages] == [(prompt + int(g.prod()) // 4, 128) for g in grids]
    query = col.encode_queries(["night train"])[0]
    assert query.shape == (len("night train") + 10, 128)  # one byte a token, and 10 augmentation tokens
    for vectors in [*col_pages, query, *dse.encode_pages(pages), *cut.encode_pages(pages)]:
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)


def encoders_prompt() -> str:
    from madqa.agents.corpus.retrieval.qwenvl import COLQWEN_PAGE

    return COLQWEN_PAGE


@pytest.mark.parametrize("kind", ["colbert", "dse", "colpali"])
def test_a_batch_of_four_gives_the_vectors_of_four_batches_of_one(
    kind: str, models: dict[str, Path], renderer: Renderer
) -> None:
    enc = {
        "colbert": lambda: encoders.ColBERTEncoder(str(models["colbert"]), device="cpu"),
        "dse": lambda: encoders.DSEEncoder(str(models["dse"]), device="cpu", **IMAGE_PIXELS),
        "colpali": lambda: encoders.ColPaliEncoder(str(models["colpali"]), device="cpu", max_visual_tokens=4),
    }[kind]()
    pages: list[Any] = (
        [p["text"] for p in PAGES[:4]]
        if kind == "colbert"
        else [renderer.image(p["document"], p["page"]) for p in PAGES[:4]]
    )
    together, alone = enc.encode_pages(pages), [enc.encode_pages([p])[0] for p in pages]
    queries = ["night train", "penguins eat herring at the zoo", "tax", "the morning train"]
    q_together, q_alone = enc.encode_queries(queries), [enc.encode_queries([q])[0] for q in queries]
    for a, b in zip([*together, *q_together], [*alone, *q_alone], strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, atol=2e-5)
    assert len({v.shape[0] for v in together}) > 1 or kind == "dse"  # padding was exercised


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["colbert", "dse", "colpali"])
def test_page_vectors_are_cached_on_disk_and_keyed(
    kind: str, models: dict[str, Path], tmp_path: Path, renderer: Renderer
) -> None:
    spec = spec_of(kind, models, ":batch_size=2")
    with ModelCalls() as first:
        retriever = build(spec, tmp_path, renderer)
    assert first.calls > 0 and retriever.page_calls == 3  # 5 pages in batches of 2
    hits = retriever.search("night train", k=5)
    with ModelCalls() as again:
        cached = build(spec, tmp_path, renderer)
    assert again.calls == 0 and cached.page_calls == 0  # read from disk: the model never ran on pages
    assert [(h.document, h.page) for h in cached.search("night train", k=5)] == [(h.document, h.page) for h in hits]
    np.testing.assert_allclose([h.score for h in cached.search("night train", k=5)], [h.score for h in hits])
    setting = {"colbert": ":doc_length=16", "dse": ":dim=8", "colpali": ":max_visual_tokens=2"}[kind]
    edited = [dict(p) for p in PAGES]
    edited[2]["text"] = "income tax returns are due in may"
    changed = {
        "setting": build(spec + setting, tmp_path, renderer),
        "pages": build(spec, tmp_path, renderer, edited),
        "fewer pages": build(spec, tmp_path, renderer, PAGES[:4]),
    }
    if kind == "colbert":
        changed["model"] = build(spec.replace(str(models["colbert"]), str(models["colbert-other"])), tmp_path, None)
    for what, rebuilt in changed.items():
        assert rebuilt.page_calls > 0, f"a change of {what} must re-encode the pages"
    assert (
        len({r.store.tokens.filename for r in changed.values()} | {retriever.store.tokens.filename})
        == len(changed) + 1
    )


def test_identical_text_ranks_first_with_colbert(models: dict[str, Path], tmp_path: Path) -> None:
    """A query that is a page's text finds that page first (the tiny BERT has no position embeddings, so identical
    text gives identical token vectors but for the query/page marker). With random weights the [MASK] query
    augmentation scores noise (a trained ColBERT learned what they match): the query length is the query's own."""
    for page in PAGES:
        length = len(page["text"].replace(",", " , ").replace(".", " . ").split()) + 3  # [CLS] [unused0] … [SEP]
        retriever = build(spec_of("colbert", models, f":query_length={length}"), tmp_path, None)
        top = retriever.search(page["text"], k=3)
        assert (top[0].document, top[0].page) == (page["document"], page["page"]), (page, top)
        assert retriever.encoder.encode_queries([page["text"]])[0].shape == (length, 16)


def recomputed(retriever: VectorRetriever, query: str) -> dict[tuple[str, int], float]:
    """MaxSim of the query against every stored page, computed here from the encoder's own vectors."""
    q = retriever.encoder.encode_queries([query])[0]
    return {key: maxsim(q, retriever.store.page(i)) for i, key in enumerate(retriever.keys)}


def test_hybrid_reranks_first_stage_candidates_by_maxsim(models: dict[str, Path], tmp_path: Path) -> None:
    hybrid = build(f"hybrid:candidates=3:bm25>{spec_of('colbert', models)}", tmp_path, None)
    assert isinstance(hybrid, HybridRetriever) and isinstance(hybrid.second, VectorRetriever)
    query = "the morning train"
    pool = [(h.document, h.page) for h in hybrid.first.search(query, k=3)]
    hits = hybrid.search(query, k=3)
    assert sorted((h.document, h.page) for h in hits) == sorted(pool)  # only the first stage's candidates
    scores = recomputed(hybrid.second, query)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    np.testing.assert_allclose([h.score for h in hits], [scores[(h.document, h.page)] for h in hits], rtol=1e-5)
    alone = hybrid.second.search(query, k=len(PAGES))
    assert [(h.document, h.page) for h in hits] == [
        (h.document, h.page) for h in alone if (h.document, h.page) in pool
    ]


def test_heaven_dse_candidates_reranked_by_colqwen(
    models: dict[str, Path], tmp_path: Path, renderer: Renderer
) -> None:
    heaven = build(f"hybrid:{spec_of('dse', models)}>{spec_of('colpali', models)}", tmp_path, renderer)
    assert isinstance(heaven, HybridRetriever) and (heaven.candidates, heaven.beta) == (200, 0.3)
    query = "night train"
    first, second = recomputed(heaven.first, query), recomputed(heaven.second, query)
    expected = sorted(first, key=lambda key: -(0.3 * first[key] + 0.7 * second[key]))
    hits = heaven.search(query, k=len(PAGES))
    assert [(h.document, h.page) for h in hits] == expected
    np.testing.assert_allclose(
        [h.score for h in hits], [0.3 * first[k] + 0.7 * second[k] for k in expected], rtol=1e-4
    )


def test_rrf_fuses_the_learned_retrievers(models: dict[str, Path], tmp_path: Path, renderer: Renderer) -> None:
    parts = [spec_of("colbert", models), spec_of("dse", models)]
    rrf, colbert, dse = make_retrievers(
        [f"rrf:{parts[0]}+{parts[1]}", *parts],
        PAGES,
        cache_dir=tmp_path / "vec",
        index_dir=tmp_path / "ix",
        renderer=renderer,
    )
    assert isinstance(rrf, RRFRetriever) and rrf.parts == [colbert, dse]  # the same vectors, built once
    query = "income tax"
    expected: dict[tuple[str, int], float] = {}
    for part in (colbert, dse):
        for rank, hit in enumerate(part.search(query, k=len(PAGES)), start=1):
            expected[(hit.document, hit.page)] = expected.get((hit.document, hit.page), 0.0) + 1 / (60 + rank)
    hits = rrf.search(query, k=len(PAGES))
    assert {(h.document, h.page): h.score for h in hits} == pytest.approx(expected)
    assert [h.score for h in hits] == sorted(expected.values(), reverse=True)


def test_checkpoints_load_through_the_specs_with_their_weights(
    models: dict[str, Path], tmp_path: Path, renderer: Renderer
) -> None:
    col = build(spec_of("colpali", models), tmp_path, renderer)
    dse = build(spec_of("dse", models), tmp_path, renderer)
    colbert = build(spec_of("colbert", models), tmp_path, None)
    for retriever, kind in ((col, "colpali"), (dse, "dse"), (colbert, "colbert")):
        loaded, original = retriever.encoder.model.state_dict(), ORIGINAL[models[kind]]
        assert sorted(loaded) == sorted(original), kind  # the checkpoint's keys map onto the module tree
        assert all(torch.equal(loaded[k], v) for k, v in original.items()), kind
    assert "custom_text_proj.weight" in col.encoder.model.state_dict()
    assert col.name == f"colpali:{models['colpali']}:max_visual_tokens=4"
    named = build(f"colpali:{models['colpali']}:arch=colqwen2.5:device=cpu", tmp_path, renderer)
    assert type(named.encoder.model).__name__ == "ColQwen2_5" and named.name.endswith(":arch=colqwen2.5")
    # colpali-engine's checkpoints name the text model `model.*` (and an adapter's projection base_model.model.*)
    from safetensors.torch import load_file, save_file

    legacy = shutil.copytree(models["colpali"], tmp_path / "colqwen2.5-legacy")
    tensors = load_file(str(legacy / "model.safetensors"))
    renamed = {
        re.sub(r"^language_model\.", "model.", re.sub(r"^custom_text_proj", "base_model.model.custom_text_proj", k)): v
        for k, v in tensors.items()
    }
    assert "model.embed_tokens.weight" in renamed and "base_model.model.custom_text_proj.weight" in renamed
    save_file(renamed, str(legacy / "model.safetensors"), metadata={"format": "pt"})
    old = build(f"colpali:{legacy}:max_visual_tokens=4:device=cpu", tmp_path, renderer).encoder.model.state_dict()
    assert sorted(old) == sorted(ORIGINAL[models["colpali"]])
    assert all(torch.equal(old[k], v) for k, v in ORIGINAL[models["colpali"]].items())


def test_colqwen_needs_no_colpali_engine_and_colsmol_names_it(
    monkeypatch: pytest.MonkeyPatch, models: dict[str, Path], tmp_path: Path, renderer: Renderer
) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "colpali_engine" else real(n, *a))
    assert build(spec_of("colpali", models), tmp_path, renderer).store is not None
    with pytest.raises(RetrievalError, match=r"colpali_engine.*pip install colpali-engine"):
        build("colpali:vidore/colSmol-256M:device=cpu", tmp_path, renderer)
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: object() if n == "colpali_engine" else real(n, *a))
    monkeypatch.setitem(sys.modules, "colpali_engine", None)  # installed, but its import fails (no torchvision)
    with pytest.raises(RetrievalError, match=r"colsmol\) needs colpali-engine, which does not import here"):
        build("colpali:vidore/colSmol-256M:device=cpu", tmp_path, renderer)


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")
    yield


def test_device_choice(models: dict[str, Path]) -> None:
    auto = encoders.ColBERTEncoder(str(models["colbert"]), device="auto")
    expected = "cuda" if torch.cuda.is_available() else "cpu"
    assert auto.device == expected and next(auto.model.parameters()).device.type == expected
    assert next(auto.model.parameters()).dtype == (torch.bfloat16 if expected == "cuda" else torch.float32)
    if not torch.cuda.is_available():
        with pytest.raises(RetrievalError, match="no CUDA device is visible"):
            encoders.ColBERTEncoder(str(models["colbert"]), device="cuda")
    with pytest.raises(RetrievalError, match="use cpu, cuda, cuda:N or auto"):
        encoders.ColBERTEncoder(str(models["colbert"]), device="tpu")
