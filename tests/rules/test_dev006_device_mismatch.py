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


@pytest.mark.parametrize(
    "loss", ["warpctc_pytorch.CTCLoss()", "nn.CTCLoss()", "torch.nn.CTCLoss()"]
)
def test_a_ctc_loss_takes_its_targets_on_the_host(loss: str) -> None:
    # crnn.pytorch (eval/blind150): warp-ctc, like torch's CTC loss, reads the targets and
    # lengths from CPU tensors; only the log-probabilities must be on the device.
    source = textwrap.dedent(
        f"""\
        import torch
        import warpctc_pytorch
        from torch import nn

        criterion = {loss}.cuda()

        def step(net, images, text, length):
            preds = net(images)
            sizes = torch.IntTensor([preds.size(0)] * images.size(0))
            return criterion(preds, text, sizes, length)

        step(nn.Linear(4, 2).cuda(), torch.randn(3, 4).cuda(), torch.IntTensor([1, 2]), torch.IntTensor([2]))
        """
    )
    assert [d.code for d in check_text(source, "x.py", OPTIONS)] == []


def test_another_loss_of_another_package_still_mixes() -> None:
    source = textwrap.dedent(
        """\
        import torch
        import mylosses
        from torch import nn

        criterion = mylosses.FocalLoss().cuda()
        preds = nn.Linear(4, 2).cuda()(torch.randn(3, 4).cuda())
        loss = criterion(preds, torch.ones(3, 2))
        """
    )
    assert [d.code for d in check_text(source, "x.py", OPTIONS)] == ["DEV006"]
