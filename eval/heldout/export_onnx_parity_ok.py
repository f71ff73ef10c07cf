"""Export a trained classifier checkpoint to ONNX and check parity with onnxruntime."""
import argparse
import copy

import numpy as np
import onnxruntime as ort
import timm
import torch


def parse_args():
    ap = argparse.ArgumentParser()
    ap.add_argument("checkpoint")
    ap.add_argument("--arch", default="resnet50")
    ap.add_argument("--num-classes", type=int, default=1000)
    ap.add_argument("--size", type=int, default=224)
    ap.add_argument("--output", default="model.onnx")
    ap.add_argument("--opset", type=int, default=17)
    ap.add_argument("--check-gpu", action="store_true")
    return ap.parse_args()


def load_model(args):
    model = timm.create_model(args.arch, num_classes=args.num_classes, pretrained=False)
    ckpt = torch.load(args.checkpoint, map_location=lambda storage, loc: storage)
    state = ckpt.get("state_dict", ckpt)
    state = {k.replace("module.", "", 1): v for k, v in state.items()}
    missing, unexpected = model.load_state_dict(state, strict=False)
    if missing or unexpected:
        print("missing:", missing, "unexpected:", unexpected)
    return model.eval()


def main():
    args = parse_args()
    model = load_model(args)
    dummy = torch.randn(2, 3, args.size, args.size)

    torch.onnx.export(
        model,
        dummy,
        args.output,
        input_names=["input"],
        output_names=["logits"],
        dynamic_axes={"input": {0: "batch"}, "logits": {0: "batch"}},
        opset_version=args.opset,
    )
    print("exported", args.output)

    sess = ort.InferenceSession(args.output, providers=["CPUExecutionProvider"])
    with torch.no_grad():
        torch_out = model(dummy)
    ort_out = sess.run(None, {"input": dummy.numpy()})[0]
    np.testing.assert_allclose(torch_out.numpy(), ort_out, rtol=1e-3, atol=1e-4)
    print("onnxruntime matches PyTorch (max abs diff %.2e)" % np.abs(torch_out.numpy() - ort_out).max())

    if args.check_gpu and torch.cuda.is_available():
        gpu_model = copy.deepcopy(model).cuda()
        with torch.no_grad():
            gpu_out = gpu_model(dummy.cuda()).cpu()
        print("max diff cpu vs cuda: %.2e" % (gpu_out - torch_out).abs().max().item())


if __name__ == "__main__":
    main()
