"""DEV006 and the objects that move the tensors they are given."""

from __future__ import annotations

import textwrap

import pytest

from devlint.engine import CheckOptions, check_text

OPTIONS = CheckOptions(frozenset({"DEV006"}))


@pytest.mark.parametrize(
    "made",
    [
        'PhotoMakerStableDiffusionXLPipeline.from_pretrained("x", torch_dtype=torch.float16)',
        'StableDiffusionPipeline.from_pretrained("x")',
        "StableDiffusionPipeline(vae, text_encoder, tokenizer, unet, scheduler)",
    ],
)
def test_a_diffusion_pipeline_moves_what_it_is_given(made: str) -> None:
    # diffusers' pipelines move their tensor inputs (latents, embeddings) to their
    # execution device: a CPU tensor handed to one on CUDA mixes nothing (PhotoMaker).
    source = textwrap.dedent(
        f"""\
        import torch
        from diffusers import StableDiffusionPipeline
        from photomaker import PhotoMakerStableDiffusionXLPipeline

        pipe = {made}.to("cuda")
        id_embeds = torch.stack([torch.randn(512)])
        images = pipe(prompt="a photo", id_embeds=id_embeds).images
        """
    )
    assert check_text(source, "x.py", OPTIONS) == []


def test_a_model_loaded_with_from_pretrained_still_mixes() -> None:
    source = textwrap.dedent(
        """\
        import torch
        from transformers import AutoModel

        model = AutoModel.from_pretrained("x").to("cuda")
        out = model(torch.randn(1, 8))
        """
    )
    assert [d.code for d in check_text(source, "x.py", OPTIONS)] == ["DEV006"]
