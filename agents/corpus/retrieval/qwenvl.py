"""Qwen2-VL / Qwen2.5-VL inputs and the ColQwen2 / ColQwen2.5 model, on plain ``transformers`` (no torchvision).

``transformers`` 5's ``Qwen2VLProcessor`` cannot be built without torchvision (its video processor needs it), and
PyPI's torchvision does not load beside the CPU build of torch; colpali-engine imports that processor, so it does
not import there either. :class:`QwenVLInputs` does what the processor does for images and text: the image
processor (``AutoImageProcessor``, whose PIL backend needs no torchvision) gives ``pixel_values`` and
``image_grid_thw``, each ``<|image_pad|>`` becomes one token per merged patch (``t·h·w / merge²``), the tokenizer
pads (left, as DSE and ColQwen do), and ``mm_token_type_ids`` (1 on image tokens) lets the model place M-RoPE.

:func:`colqwen_class` is colpali-engine 0.3.18's ``ColQwen2`` / ``ColQwen2_5`` written again: the VL base model,
a ``custom_text_proj`` linear layer to 128 dimensions, L2-normalised token vectors, with colpali-engine's checkpoint
key mapping (a merged ColQwen checkpoint loads as it does there; a PEFT adapter checkpoint such as
``vidore/colqwen2.5-v0.2`` needs ``peft`` installed, which ``transformers`` then uses). Its prompts are
colpali-engine's (:data:`COLQWEN_PAGE`; a query is the query and ten ``<|endoftext|>`` augmentation tokens).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

IMAGE_PAD = "<|image_pad|>"
#: colpali-engine's ColQwen2/2.5 page prompt and query suffix (``visual_prompt_prefix``, 10 x the augmentation token).
COLQWEN_PAGE = (
    "<|im_start|>user\n<|vision_start|><|image_pad|><|vision_end|>Describe the image.<|im_end|><|endoftext|>"
)
COLQWEN_QUERY_SUFFIX = "<|endoftext|>" * 10
#: colpali-engine's key mapping of ColQwen checkpoints onto the ``transformers`` 5 module tree.
COLQWEN_KEYS = {
    r"^base_model\.model\.custom_text_proj": "custom_text_proj",
    r"^model\.layers": "language_model.layers",
    r"^model\.embed_tokens": "language_model.embed_tokens",
    r"^model\.norm": "language_model.norm",
}


class QwenVLInputs:
    """Batches of Qwen2-VL model inputs from prompts (each with at most one ``<|image_pad|>``) and images."""

    def __init__(self, image_processor: Any, tokenizer: Any) -> None:
        self.image_processor, self.tokenizer = image_processor, tokenizer
        tokenizer.padding_side = "left"
        self.image_token_id = tokenizer.convert_tokens_to_ids(IMAGE_PAD)
        self.merge = int(getattr(image_processor, "merge_size", 2))

    @classmethod
    def load(cls, model_id: str, min_pixels: int | None = None, max_pixels: int | None = None) -> QwenVLInputs:
        """The image processor and tokenizer of a checkpoint, images bounded to ``[min_pixels, max_pixels]``."""
        from transformers import AutoImageProcessor, AutoTokenizer

        image_processor = AutoImageProcessor.from_pretrained(model_id)
        set_pixels(image_processor, min_pixels, max_pixels)
        return cls(image_processor, AutoTokenizer.from_pretrained(model_id))

    def __call__(self, texts: Sequence[str], images: Sequence[Any] | None = None) -> dict[str, Any]:
        import torch

        texts, out = list(texts), {}
        if images:
            out = dict(self.image_processor(images=list(images), return_tensors="pt"))
            grid = out["image_grid_thw"]
            if len(grid) != len(texts) or any(t.count(IMAGE_PAD) != 1 for t in texts):
                raise ValueError("one prompt with one <|image_pad|> per image")
            texts = [
                t.replace(IMAGE_PAD, IMAGE_PAD * (int(g.prod()) // self.merge**2))
                for t, g in zip(texts, grid, strict=True)
            ]
        enc = self.tokenizer(texts, padding="longest", return_tensors="pt")
        out["input_ids"], out["attention_mask"] = enc["input_ids"], enc["attention_mask"]
        out["mm_token_type_ids"] = (enc["input_ids"] == self.image_token_id).to(torch.int32)
        return out


def set_pixels(image_processor: Any, min_pixels: int | None, max_pixels: int | None) -> None:
    """Bound the images' area in pixels (the Qwen2-VL image processor's ``shortest_edge``/``longest_edge``)."""
    if min_pixels:
        image_processor.size["shortest_edge"] = min_pixels
    if max_pixels:
        image_processor.size["longest_edge"] = max_pixels


@cache
def colqwen_class(arch: str) -> Any:
    """The ColQwen model class of ``arch`` (``colqwen2`` or ``colqwen2.5``): a VL base model plus its projection."""
    from torch import nn

    if arch == "colqwen2":
        from transformers import Qwen2VLModel as Base
    elif arch == "colqwen2.5":
        from transformers import Qwen2_5_VLModel as Base
    else:
        raise ValueError(f"no ColQwen model for arch {arch!r}")

    class ColQwen(Base):  # type: ignore[misc, valid-type]
        """colpali-engine's ColQwen: token vectors of the VL model projected to 128 dims, unit-norm."""

        main_input_name = "doc_input_ids"

        def __init__(self, config: Any) -> None:
            super().__init__(config)
            hidden = getattr(config, "hidden_size", None) or config.text_config.hidden_size
            self.dim = 128
            self.custom_text_proj = nn.Linear(hidden, self.dim)
            self.post_init()

        @classmethod
        def from_pretrained(cls, *args: Any, **kwargs: Any) -> Any:
            kwargs.setdefault("key_mapping", {**getattr(Base, "_checkpoint_conversion_mapping", {}), **COLQWEN_KEYS})
            return super().from_pretrained(*args, **kwargs)

        def forward(self, **kwargs: Any) -> Any:  # (batch, tokens, 128), padding rows zero
            for name in ("return_dict", "output_hidden_states", "use_cache"):
                kwargs.pop(name, None)
            hidden = super().forward(**kwargs, use_cache=False, return_dict=True).last_hidden_state
            proj = self.custom_text_proj(hidden)
            proj = proj / proj.norm(dim=-1, keepdim=True).clamp_min(1e-12)
            return proj * kwargs["attention_mask"].unsqueeze(-1).to(proj.dtype)

    ColQwen.__name__ = ColQwen.__qualname__ = "ColQwen2" if arch == "colqwen2" else "ColQwen2_5"
    return ColQwen
