"""Tiny randomly initialised checkpoints (ColBERT, DSE/Qwen2-VL, ColQwen2.5) written with ``save_pretrained`` for
the learned retrievers' tests, the pages they index and a stand-in page renderer; skips without torch/transformers."""

from __future__ import annotations

import string
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from PIL import Image, ImageDraw

from helpers.search_corpus import pages_by_document
from helpers.tiny_bert import tiny_bert

torch = pytest.importorskip("torch", reason="the late-interaction encoders need torch (pip install -e '.[late]')")
transformers = pytest.importorskip("transformers", reason="the encoders need transformers (pip install -e '.[late]')")

from madqa.agents.corpus.retrieval.qwenvl import colqwen_class  # noqa: E402

PAGES = pages_by_document(
    {
        "zoo.pdf": ["penguins eat herring at the zoo.", "elephants bathe in the pool, every morning"],
        "tax.pdf": ["income tax returns are due in april"],
        "rail.pdf": ["the night train departs at eleven", "tickets for the morning train are sold at the station"],
    }
)


WORDS = sorted({w.strip(string.punctuation) for p in PAGES for w in p["text"].split()} | {"lions", "roar"})


SPECIALS = [
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|vision_start|>",
    "<|vision_end|>",
    "<|image_pad|>",
    "<|video_pad|>",
]


#: The state dict of each checkpoint written here, by folder (to check what the specs load).
ORIGINAL: dict[Path, dict[str, Any]] = {}


IMAGE_PIXELS = {"min_pixels": 28 * 28, "max_pixels": 4 * 28 * 28}  # at most 4 merged patches a page


def colbert_folder(root: Path, seed: int = 0) -> Path:
    """A ColBERTv2-layout checkpoint: BERT, its vocab and ``linear.weight``."""
    from safetensors.torch import save_file
    from transformers import BertTokenizerFast

    folder = root / f"colbert-tiny-{seed}"
    folder.mkdir()
    vocab = ["[PAD]", "[unused0]", "[unused1]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *string.punctuation, *WORDS]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    torch.manual_seed(seed)
    model = tiny_bert(len(vocab), hidden_size=32, layers=2)
    with torch.no_grad():  # a token's vector is then its word in its bag of words: the same text, the same vectors
        model.embeddings.position_embeddings.weight.zero_()
    model.save_pretrained(folder)
    ORIGINAL[folder] = {k: v.clone() for k, v in model.state_dict().items()}
    BertTokenizerFast(vocab=str(folder / "vocab.txt")).save_pretrained(folder)
    save_file({"linear.weight": torch.randn(16, 32)}, str(folder / "colbert_linear.safetensors"))
    return folder


def qwen_tokenizer(words: Sequence[str] = ()) -> Any:
    """A byte-level BPE tokenizer (the 256 byte symbols, no merges) with Qwen2-VL's special tokens (and ``words``
    as whole tokens)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE(vocab={ch: i for i, ch in enumerate(pre_tokenizers.ByteLevel.alphabet())}, merges=[]))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.add_special_tokens(SPECIALS)
    bpe.add_tokens(list(words))
    return PreTrainedTokenizerFast(tokenizer_object=bpe, pad_token="<|endoftext|>", eos_token="<|im_end|>")


def qwen_config(kind: str, tokenizer: Any) -> Any:
    ids = {s: tokenizer.convert_tokens_to_ids(s) for s in SPECIALS}
    rope = {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 3, 3]}  # 2+3+3 = head_dim 16 / 2
    text = {
        "vocab_size": len(tokenizer),
        "hidden_size": 32,
        "intermediate_size": 64,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "num_key_value_heads": 1,
        "pad_token_id": ids["<|endoftext|>"],
        "bos_token_id": ids["<|endoftext|>"],
        "eos_token_id": ids["<|im_end|>"],
        "rope_parameters": rope,
    }
    tokens = {
        "image_token_id": ids["<|image_pad|>"],
        "video_token_id": ids["<|video_pad|>"],
        "vision_start_token_id": ids["<|vision_start|>"],
        "vision_end_token_id": ids["<|vision_end|>"],
    }
    if kind == "qwen2":
        vision = {"depth": 1, "embed_dim": 16, "hidden_size": 32, "num_heads": 2, "mlp_ratio": 2}
        return transformers.Qwen2VLConfig(text_config=text, vision_config=vision, **tokens)
    vision = {
        "depth": 1,
        "hidden_size": 16,
        "intermediate_size": 32,
        "num_heads": 2,
        "out_hidden_size": 32,
        "window_size": 28,
        "fullatt_block_indexes": [0],
    }
    return transformers.Qwen2_5_VLConfig(text_config=text, vision_config=vision, **tokens)


def qwen_folder(root: Path, kind: str, seed: int = 0, words: Sequence[str] = ()) -> Path:
    """A DSE (Qwen2-VL) or ColQwen2.5 checkpoint: model, tokenizer, image processor."""
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import Qwen2VLImageProcessorPil

    folder = root / f"{'dse-qwen2' if kind == 'qwen2' else 'colqwen2.5'}-tiny-{seed}"
    tokenizer = qwen_tokenizer(words)
    torch.manual_seed(seed)
    config = qwen_config(kind, tokenizer)
    model = (
        transformers.Qwen2VLForConditionalGeneration(config)
        if kind == "qwen2"
        else colqwen_class("colqwen2.5")(config)
    )
    model.save_pretrained(folder)
    ORIGINAL[folder] = {k: v.clone() for k, v in model.state_dict().items()}
    tokenizer.save_pretrained(folder)
    Qwen2VLImageProcessorPil().save_pretrained(folder)
    return folder


class Renderer:
    """Page images (a different drawing and size per page) and the PDF files they come from."""

    dpi, max_side, max_pixels = 72, 100, None

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        for doc in {p["document"] for p in PAGES}:
            (folder / doc).write_bytes(b"%PDF-1.4 " + doc.encode())

    def _path(self, document: str) -> Path:
        return self.folder / document

    def image(self, document: str, page: int) -> Image.Image:
        i = [(p["document"], p["page"]) for p in PAGES].index((document, page))
        img = Image.new("RGB", (40 + 12 * i, 60 - 6 * i), (40 * i, 255 - 40 * i, 90))
        ImageDraw.Draw(img).rectangle((2 * i, 3, 20, 10 + 3 * i), fill=(255, 255, 255))
        return img
