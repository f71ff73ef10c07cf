"""DEV002 and the wrappers that scatter their inputs to the CUDA devices."""

from __future__ import annotations

import textwrap

from devlint.engine import CheckOptions, check_text

OPTIONS = CheckOptions(frozenset({"DEV002", "DEV016"}))

NAMED_DATA_PARALLEL = textwrap.dedent(
    """\
    import argparse
    import torch
    from encoding.parallel import DataParallelModel, DataParallelCriterion

    parser = argparse.ArgumentParser()
    parser.add_argument("--no-cuda", action="store_true")
    args = parser.parse_args()
    args.cuda = not args.no_cuda and torch.cuda.is_available()
    model = torch.nn.Linear(4, 2)
    criterion = torch.nn.CrossEntropyLoss()
    if args.cuda:
        model = DataParallelModel(model).cuda()
        criterion = DataParallelCriterion(criterion).cuda()
    loader = torch.utils.data.DataLoader(dataset)
    for image, target in loader:
        outputs = model(image)
        loss = criterion(outputs, target)
    """
)


def test_a_class_named_for_data_parallelism_scatters_its_inputs() -> None:
    """PyTorch-Encoding's ``DataParallelModel(model).cuda()`` under ``if args.cuda:``
    takes CPU batches as ``nn.DataParallel`` does (eval/blind53); the block that wraps and
    moves is no method one either (READING, blind45)."""
    assert check_text(NAMED_DATA_PARALLEL, "train.py", OPTIONS) == []


def test_a_value_an_unseen_function_computed_is_no_evidence() -> None:
    """A batch element meeting what another package's function returned from device
    tensors: that value's placement is an inference (``Value.computed_from``), not a
    known device, so no mismatch is claimed; a moved model's output is evidence."""
    source = textwrap.dedent(
        """\
        import torch
        from otherpkg import make_prior
        device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
        model = torch.nn.Linear(4, 4).to(device)
        anchor = torch.zeros(4, device=device)
        loader = torch.utils.data.DataLoader(dataset)
        for x, y in loader:
            prior = make_prior(anchor).detach()
            gap = prior - y
            out = model(x)
        """
    )
    rows = [d.start.row for d in check_text(source, "example.py", OPTIONS) if d.code == "DEV002"]
    assert rows == [10]
