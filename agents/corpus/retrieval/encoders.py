"""The real :class:`~.late.PageEncoder` s, on torch (pip extra ``late``; imported only when one is built).

* :class:`ColBERTEncoder` (``colbert:MODEL``): a BERT-family encoder and its linear projection, ColBERTv2's
  recipe written on ``transformers`` (pylate was not used: it pins an older ``huggingface-hub`` and torch than
  this project). The query gets the ``[unused0]`` marker after ``[CLS]`` and is padded with ``[MASK]`` to
  ``query_length`` (32) tokens that all take part (query augmentation); the page gets ``[unused1]``, is cut at
  ``doc_length`` (512, BERT's limit; ColBERTv2 trained at 180) and keeps its non-padding, non-punctuation tokens.
  The projection is the checkpoint's ``linear.weight`` (ColBERTv2's layout; a sentence-transformers ``1_Dense``
  folder also works); vectors are L2-normalised.
* :class:`ColPaliEncoder` (``colpali:MODEL``): multi-vector page-image encoders. ColQwen2 and ColQwen2.5 are
  written on ``transformers`` (:mod:`.qwenvl`: colpali-engine's model and prompts; colpali-engine itself does not
  import without torchvision, which does not load beside torch's CPU build); ColPali and ColSmol (ColIdefics3)
  are colpali-engine's, with its processor's ``process_images`` / ``process_queries``. The padding vectors are
  dropped.
* :class:`DSEEncoder` (``dse:MODEL``): a Qwen2-VL model as a single-vector encoder (Ma et al. 2024,
  ``MrLight/dse-qwen2-2b-mrl-v1``): the page prompt "What is shown in this image?" after the image, the query
  "Query: …" after a blank 28 x 28 image, the last token's final hidden state (left padding), cut to ``dim``
  (Matryoshka) and L2-normalised. Images between ``min_pixels`` (28²) and ``max_pixels`` (2560 · 28²), HEAVEN's;
  the inputs are built by :class:`~.qwenvl.QwenVLInputs` (no torchvision).

``device`` is ``auto`` (CUDA when present), ``cpu`` or ``cuda[:N]``; models run in ``torch.no_grad`` in float32 on
the CPU and bfloat16 on CUDA. Every encoder can also be built from loaded objects (``model=``, ``processor=``);
tests/agents/corpus/test_retrieval_late_models.py loads tiny randomly initialised checkpoints from a folder through the
specs.
"""

from __future__ import annotations

import importlib.util
import string
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from madqa.agents.corpus.retrieval.base import RetrievalError
from madqa.agents.harness.deps import MissingDependencyError, install_hint

#: pip names of the modules :func:`require` checks (the ``late`` extra has torch and transformers; colpali-engine,
#: for ColPali and ColSmol only, is not in it: it does not import without torchvision, see :mod:`.qwenvl`).
PIP_NAMES = {"colpali_engine": "colpali-engine"}


def require(spec: str, *modules: str) -> None:
    """Raise :class:`MissingDependencyError` naming the packages to install unless every module is importable."""
    missing = [m for m in ("torch", "transformers", *modules) if importlib.util.find_spec(m) is None]
    if missing:
        hints = [install_hint("late")] if {"torch", "transformers"} & set(missing) else []
        hints += [f"pip install {PIP_NAMES.get(m, m)}" for m in missing if m not in ("torch", "transformers")]
        raise MissingDependencyError(
            f"retriever {spec!r} needs the Python package(s) {', '.join(missing)}, which "
            f"are not installed: {' and '.join(hints)}"
        )


def pick_device(device: str) -> str:
    """``auto`` → ``cuda`` when a GPU is visible, else ``cpu``; ``cuda`` without one is an error."""
    import torch

    device = (device or "auto").strip().lower()
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RetrievalError(f"device={device}: no CUDA device is visible here (use device=cpu or device=auto)")
    if device != "cpu" and not device.startswith("cuda"):
        raise RetrievalError(f"device={device}: use cpu, cuda, cuda:N or auto")
    return device


def versions(*packages: str) -> str:
    """``name=version`` of the given packages (part of every cache key)."""
    out = []
    for name in packages:
        try:
            out.append(f"{name}={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            out.append(f"{name}=none")
    return ",".join(out)


def _dtype(device: str) -> Any:
    import torch

    return torch.bfloat16 if device.startswith("cuda") else torch.float32


def _unit(x: Any) -> Any:
    return x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)


class ColBERTEncoder:
    """ColBERT late interaction over page text (see the module docstring)."""

    modality = "text"

    def __init__(
        self,
        model_id: str,
        *,
        device: str = "auto",
        batch_size: int = 32,
        query_length: int = 32,
        doc_length: int = 512,
        model: Any = None,
        tokenizer: Any = None,
        projection: Any = None,
    ) -> None:
        import torch

        self.device = pick_device(device)
        if model is None:
            from transformers import AutoModel, AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(model_id)
            model = AutoModel.from_pretrained(model_id, dtype=_dtype(self.device))
            projection = _colbert_projection(model_id)
        self.model = model.to(self.device).eval()
        self.tokenizer, self.batch_size = tokenizer, batch_size
        limit = int(getattr(model.config, "max_position_embeddings", 0) or doc_length)  # a page is cut there too
        self.query_length, self.doc_length = min(query_length, limit), min(doc_length, limit)
        self.projection = None if projection is None else torch.as_tensor(projection).to(self.device, self.model.dtype)
        vocab = tokenizer.get_vocab()
        self.q_marker, self.d_marker = vocab.get("[unused0]"), vocab.get("[unused1]")
        self.skip = {vocab[c] for c in string.punctuation if c in vocab}
        self.name = f"colbert:{model_id}"
        dim = self.projection.shape[0] if self.projection is not None else model.config.hidden_size
        self.cache_key = (
            f"{self.name}|q{self.query_length}|d{self.doc_length}|dim{dim}|{versions('torch', 'transformers')}"
        )

    def _ids(self, texts: Sequence[str], length: int, marker: int | None, query: bool) -> tuple[Any, Any]:
        import torch

        tok = self.tokenizer
        room = length - (1 if marker is not None else 0)
        enc = tok(
            list(texts),
            max_length=room,
            truncation=True,
            padding="max_length" if query else "longest",
            return_tensors="pt",
        )
        ids, mask = enc["input_ids"], enc["attention_mask"]
        if marker is not None:
            col = torch.full((ids.shape[0], 1), marker, dtype=ids.dtype)
            ids = torch.cat([ids[:, :1], col, ids[:, 1:]], dim=1)
            mask = torch.cat([mask[:, :1], torch.ones_like(col), mask[:, 1:]], dim=1)
        if query:  # query augmentation: padding becomes [MASK] tokens that are attended to
            ids = torch.where(mask.bool(), ids, torch.full_like(ids, tok.mask_token_id))
            mask = torch.ones_like(mask)
        return ids, mask

    def _encode(self, texts: Sequence[str], length: int, marker: int | None, query: bool) -> list[np.ndarray]:
        import torch

        ids, mask = self._ids(texts, length, marker, query)
        with torch.no_grad():
            hidden = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device)).last_hidden_state
            if self.projection is not None:
                hidden = hidden @ self.projection.T
            vectors = _unit(hidden.float()).cpu().numpy()
        out = []
        for row, keep_mask, row_ids in zip(vectors, mask.numpy(), ids.numpy(), strict=True):
            keep = keep_mask.astype(bool)
            if not query and self.skip:
                keep &= ~np.isin(row_ids, list(self.skip))
            out.append(row[keep].astype(np.float32))
        return out

    def encode_queries(self, queries: Sequence[str]) -> list[np.ndarray]:
        return self._encode(queries, self.query_length, self.q_marker, True)

    def query_tokens(self, queries: Sequence[str]) -> list[list[str]]:
        """The token of each row of :meth:`encode_queries` (HEAVEN's query filter picks rows by them)."""
        ids, _ = self._ids(queries, self.query_length, self.q_marker, True)
        return [self.tokenizer.convert_ids_to_tokens(row.tolist()) for row in ids]

    def encode_pages(self, pages: Sequence[Any]) -> list[np.ndarray]:
        return self._encode([str(p) for p in pages], self.doc_length, self.d_marker, False)


def _colbert_projection(model_id: str) -> Any:
    """The ``linear.weight`` of a ColBERT checkpoint (its own file, or ``1_Dense``), or ``None``."""
    from safetensors import safe_open

    folder = Path(model_id)
    if not folder.is_dir():
        from huggingface_hub import snapshot_download

        folder = Path(snapshot_download(model_id, allow_patterns=["*.safetensors", "*/*.safetensors"]))
    for path in [*sorted(folder.glob("*.safetensors")), *sorted(folder.glob("1_Dense/*.safetensors"))]:
        with safe_open(str(path), framework="pt") as fh:
            for key in fh.keys():  # noqa: SIM118 - safe_open has no __iter__
                if key == "linear.weight" or key.endswith(".linear.weight"):
                    return fh.get_tensor(key)
    return None


#: The ``colpali:`` architectures, by a lower-case fragment of the model id or its ``arch=`` option.
COLPALI_ARCHS = (
    ("colqwen2.5", "colqwen2.5"),
    ("colqwen2_5", "colqwen2.5"),
    ("colqwen2", "colqwen2"),
    ("colsmol", "colsmol"),
    ("colidefics3", "colsmol"),
    ("colpali", "colpali"),
)
#: The ones written here on ``transformers`` (:mod:`.qwenvl`); the others are colpali-engine's (model, processor).
COLQWEN_ARCHS = ("colqwen2.5", "colqwen2")
COLPALI_ENGINE = {"colsmol": ("ColIdefics3", "ColIdefics3Processor"), "colpali": ("ColPali", "ColPaliProcessor")}


def colpali_arch(model_id: str, arch: str | None = None) -> str:
    """The architecture of a ``colpali:`` model (``colqwen2.5``, ``colqwen2``, ``colsmol``, ``colpali``)."""
    wanted = (arch or model_id).lower()
    for fragment, name in COLPALI_ARCHS:
        if fragment in wanted:
            return name
    names = ", ".join(dict.fromkeys(f for f, _ in COLPALI_ARCHS))
    raise RetrievalError(f"colpali:{model_id}: cannot tell the architecture from the name; add arch=NAME ({names})")


class ColPaliEncoder:
    """Multi-vector page-image encoder: ColQwen2/2.5 (:mod:`.qwenvl`) or colpali-engine's ColPali/ColSmol."""

    modality = "image"

    def __init__(
        self,
        model_id: str,
        *,
        device: str = "auto",
        batch_size: int = 4,
        arch: str | None = None,
        max_visual_tokens: int | None = None,
        model: Any = None,
        processor: Any = None,
    ) -> None:
        self.device = pick_device(device)
        self.arch = colpali_arch(model_id, arch) if model is None else (arch or "")
        pixels = max_visual_tokens * 28 * 28 if max_visual_tokens else None  # colpali-engine's max_num_visual_tokens
        if model is None and self.arch in COLQWEN_ARCHS:
            from madqa.agents.corpus.retrieval.qwenvl import QwenVLInputs, colqwen_class

            model = colqwen_class(self.arch).from_pretrained(model_id, dtype=_dtype(self.device))
            processor = QwenVLInputs.load(model_id, max_pixels=pixels)
        elif model is None:
            try:
                import colpali_engine.models as models
            except ImportError as exc:  # e.g. installed, but it imports torchvision, absent or not loading
                raise MissingDependencyError(
                    f"colpali:{model_id} ({self.arch}) needs colpali-engine, which does not import here: {exc}"
                ) from None
            model_cls, proc_cls = (getattr(models, n) for n in COLPALI_ENGINE[self.arch])
            model = model_cls.from_pretrained(model_id, dtype=_dtype(self.device))
            kwargs = {"max_num_visual_tokens": max_visual_tokens} if max_visual_tokens else {}
            processor = proc_cls.from_pretrained(model_id, **kwargs)
        self.model, self.processor, self.batch_size = model.to(self.device).eval(), processor, batch_size
        self.name = f"colpali:{model_id}"
        libraries = (
            ("torch", "transformers")
            if not hasattr(processor, "process_images")
            else ("torch", "transformers", "colpali-engine")
        )
        self.cache_key = (
            f"{self.name}|{type(model).__name__}|tokens{max_visual_tokens or 'default'}|{versions(*libraries)}"
        )

    def _run(self, batch: Any) -> list[np.ndarray]:
        import torch

        with torch.no_grad():
            out = self.model(**{k: v.to(self.device) for k, v in batch.items()}).float().cpu().numpy()
        mask = batch["attention_mask"].cpu().numpy().astype(bool)
        return [row[keep].astype(np.float32) for row, keep in zip(out, mask, strict=True)]

    def _queries(self, queries: Sequence[str]) -> Any:
        if hasattr(self.processor, "process_queries"):
            return self.processor.process_queries(list(queries))
        from madqa.agents.corpus.retrieval.qwenvl import COLQWEN_QUERY_SUFFIX

        return self.processor([q + COLQWEN_QUERY_SUFFIX for q in queries])

    def encode_queries(self, queries: Sequence[str]) -> list[np.ndarray]:
        return self._run(self._queries(queries))

    def query_tokens(self, queries: Sequence[str]) -> list[list[str]]:
        """The token of each row of :meth:`encode_queries` (HEAVEN's query filter picks rows by them)."""
        batch, tokenizer = self._queries(queries), self.processor.tokenizer
        return [
            tokenizer.convert_ids_to_tokens(ids[mask.bool()].tolist())
            for ids, mask in zip(batch["input_ids"], batch["attention_mask"], strict=True)
        ]

    def encode_pages(self, pages: Sequence[Any]) -> list[np.ndarray]:
        images = [p.convert("RGB") for p in pages]
        if hasattr(self.processor, "process_images"):
            return self._run(self.processor.process_images(images))
        from madqa.agents.corpus.retrieval.qwenvl import COLQWEN_PAGE

        return self._run(self.processor([COLQWEN_PAGE] * len(images), images))


#: DSE's prompts (its model card's), written as Qwen2-VL's chat template renders them.
DSE_PAGE = (
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n<|vision_start|>"
    "<|image_pad|><|vision_end|>What is shown in this image?<|im_end|>\n<|im_start|>assistant\n<|endoftext|>"
)
DSE_QUERY = (
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n<|im_start|>user\n<|vision_start|>"
    "<|image_pad|><|vision_end|>Query: {query}<|im_end|>\n<|im_start|>assistant\n<|endoftext|>"
)
DSE_MIN_PIXELS, DSE_MAX_PIXELS = 28 * 28, 2560 * 28 * 28


class DSEEncoder:
    """Single-vector page-image encoder on a Qwen2-VL model (see the module docstring)."""

    modality = "image"

    def __init__(
        self,
        model_id: str,
        *,
        device: str = "auto",
        batch_size: int = 4,
        dim: int | None = None,
        min_pixels: int = DSE_MIN_PIXELS,
        max_pixels: int = DSE_MAX_PIXELS,
        model: Any = None,
        processor: Any = None,
    ) -> None:
        self.device = pick_device(device)
        if model is None:
            from transformers import Qwen2VLForConditionalGeneration

            from madqa.agents.corpus.retrieval.qwenvl import QwenVLInputs

            processor = QwenVLInputs.load(model_id, min_pixels=min_pixels, max_pixels=max_pixels)
            model = Qwen2VLForConditionalGeneration.from_pretrained(model_id, dtype=_dtype(self.device))
        self.model, self.processor, self.batch_size = model.to(self.device).eval(), processor, batch_size
        self.dim = dim
        self.name = f"dse:{model_id}"
        self.cache_key = (
            f"{self.name}|dim{dim or 'full'}|px{min_pixels}-{max_pixels}|{versions('torch', 'transformers')}"
        )

    def _run(self, texts: list[str], images: list[Any]) -> list[np.ndarray]:
        import torch

        batch = {k: v.to(self.device) for k, v in self.processor(texts, images).items()}
        with torch.no_grad():
            out = self.model(**batch, output_hidden_states=True, return_dict=True, use_cache=False)
            last = out.hidden_states[-1][:, -1]
            if self.dim:
                last = last[:, : self.dim]
            vectors = _unit(last.float()).cpu().numpy()
        return [v[None, :].astype(np.float32) for v in vectors]

    def encode_queries(self, queries: Sequence[str]) -> list[np.ndarray]:
        from PIL import Image

        blank = [Image.new("RGB", (28, 28)) for _ in queries]
        return self._run([DSE_QUERY.format(query=q) for q in queries], blank)

    def encode_pages(self, pages: Sequence[Any]) -> list[np.ndarray]:
        return self._run([DSE_PAGE] * len(pages), [p.convert("RGB") for p in pages])
