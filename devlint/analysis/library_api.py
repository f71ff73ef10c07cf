"""Other libraries' semantics, as data: what devlint knows of the libraries around torch.

The objects that place what they are given (Hugging Face accelerate's ``Accelerator``,
Lightning's ``Fabric`` / ``Trainer``, ColossalAI's ``Booster``), the packages that exist
only with CUDA, other libraries' test and command-line decorators, NumPy's float64
functions, and the calls whose ``device=`` places no torch tensor. ``torch_api.py`` reads
them into its effect table; the interpreter reads them through it or directly.
"""

from __future__ import annotations

# Packages that only work with CUDA (kernels, CUDA bindings, CUDA-only frameworks): a module
# that imports one at module level is written for a CUDA machine.
CUDA_ONLY_PACKAGES = frozenset(
    {
        "triton",
        "megatron",
        "cupy",
        "pycuda",
        "flash_attn",
        "deep_gemm",
        "transformer_engine",
        "tensorrt",
        "torch_tensorrt",
        "smdistributed",  # SageMaker model parallelism: GPU instances only
    }
)

# Decorators that call the function with its options' dataclass filled from the command
# line (CORL's ``@pyrallis.wrap()`` on ``train(config: TrainConfig)``, eval/blind135).
COMMAND_LINE_WRAPPERS = frozenset({"pyrallis.wrap", "pyrallis.argparsing.wrap"})


def parses_command_line(decorator: str | None) -> bool:
    return decorator in COMMAND_LINE_WRAPPERS


# Test libraries' decorators that skip a test unless CUDA is there (transformers' test
# utilities test ``torch_device == "cuda"``, accelerate's ``torch.cuda.is_available()``).
CUDA_TEST_DECORATORS = frozenset(
    {
        "transformers.testing_utils.require_torch_gpu",
        "transformers.testing_utils.require_torch_multi_gpu",
        "accelerate.test_utils.require_cuda",
        "accelerate.test_utils.testing.require_cuda",
    }
)
# Hugging Face accelerate: an ``Accelerator()`` (this qualname stands for one) puts what
# its ``prepare`` is given on its device, which may be any (``accelerator.device``); its
# ``unwrap_model(m)`` is the model, ``skip_first_batches(loader, n)`` the loader.
ACCELERATOR_OBJECT = "accelerate.Accelerator()"
ACCELERATOR_CLASSES = frozenset({"accelerate.Accelerator"})
ACCELERATOR_PREPARE = frozenset(
    f"{ACCELERATOR_OBJECT}.{name}" for name in ("prepare", "prepare_model", "prepare_data_loader")
)
# Lightning's ``Fabric`` and ``Trainer`` (these qualnames stand for one): ``setup``,
# ``setup_dataloaders`` and ``to_device`` put what they are given on its device. Built for
# CUDA (``accelerator="cuda"`` or ``"gpu"``), one raises where CUDA is absent: the code
# after it, and the functions it is handed to, run only with CUDA.
LIGHTNING_CLASSES = frozenset(
    {
        "lightning.Fabric", "lightning.fabric.Fabric", "lightning_fabric.Fabric",
        "lightning.Trainer", "lightning.pytorch.Trainer", "pytorch_lightning.Trainer",
    }
)  # fmt: skip
LIGHTNING_OBJECT = "lightning.Fabric()"
LIGHTNING_CUDA_OBJECT = "lightning.Fabric(accelerator='cuda')"
CUDA_ACCELERATOR_NAMES = frozenset({"cuda", "gpu"})
ACCELERATOR_PREPARE = ACCELERATOR_PREPARE | frozenset(
    f"{obj}.{name}"
    for obj in (LIGHTNING_OBJECT, LIGHTNING_CUDA_OBJECT)
    for name in ("setup", "setup_module", "setup_dataloaders", "to_device")
)
# ColossalAI's ``Booster(plugin=...)``: ``boost(model, optimizer, criterion, dataloader,
# lr_scheduler)`` returns the five, the model on the plugin's accelerator (any device).
BOOSTER_OBJECT = "colossalai.booster.Booster()"
BOOSTER_CLASSES = frozenset({"colossalai.booster.Booster", "colossalai.booster.booster.Booster"})
BOOST = f"{BOOSTER_OBJECT}.boost"
BOOST_PARAMETERS = ("model", "optimizer", "criterion", "dataloader", "lr_scheduler")
ACCELERATOR_PREPARE = ACCELERATOR_PREPARE | {BOOST}
# The objects that put what they set up on their device (passed on as they are).
PLACING_OBJECTS = frozenset(
    {ACCELERATOR_OBJECT, LIGHTNING_OBJECT, LIGHTNING_CUDA_OBJECT, BOOSTER_OBJECT}
)
ACCELERATOR_DEVICE_ATTRIBUTES = frozenset(
    f"{obj}.device" for obj in (ACCELERATOR_OBJECT, LIGHTNING_OBJECT, LIGHTNING_CUDA_OBJECT)
)


# NumPy functions whose arrays are float64 unless ``dtype=`` says otherwise (NumPy's
# default float type), and those that build an array from data (float64 from floats).
NUMPY_FLOAT64 = frozenset(
    f"numpy.{name}"
    for name in (
        "zeros", "ones", "empty", "full", "linspace", "logspace", "eye", "identity",
        "loadtxt", "genfromtxt", "random.rand", "random.randn", "random.normal",
        "random.uniform", "random.random", "random.standard_normal", "random.random_sample",
        "random.beta", "random.exponential", "random.gamma", "random.laplace",
    )
)  # fmt: skip
NUMPY_FROM_DATA = frozenset(
    {"numpy.array", "numpy.asarray", "numpy.stack", "numpy.concatenate", "numpy.vstack"}
)
# Calls that only hold their keywords as data: ``SimpleNamespace(device="cuda")`` is a
# record of a setting, not a placement (the value is placed, if at all, where it is read).
RECORD_CONSTRUCTORS = frozenset(
    {"types.SimpleNamespace", "argparse.Namespace", "collections.OrderedDict", "builtins.dict"}
)


# Libraries that run on their own runtime, not torch's: their ``device="cuda"`` places no
# torch tensor (faster-whisper runs CTranslate2: F5-TTS, OpenVoice: stop 37's sweep).
OTHER_RUNTIMES = (
    "faster_whisper.", "ctranslate2.", "onnxruntime.", "tensorflow.", "jax.", "paddle.",
    "mlx.", "cupy.", "tensorrt.",
)  # fmt: skip
