"""What devlint knows about the PyTorch API, as data: one table per question."""

from __future__ import annotations

# Calls whose truthy result means an accelerator is available; the value names the backend.
CUDA_AVAILABILITY: dict[str, str] = {
    "torch.cuda.is_available": "cuda",
    "torch.cuda.device_count": "cuda",
    "torch.cuda.is_initialized": "cuda",
    "torch.accelerator.is_available": "accelerator",
    "torch.accelerator.device_count": "accelerator",
    "torch.backends.mps.is_available": "mps",
    "torch.backends.mps.is_built": "mps",
    "torch.mps.is_available": "mps",
}
# Attributes that are non-empty only where CUDA is available (``len(...) > 0`` tests it).
CUDA_AVAILABILITY_ATTRIBUTES = frozenset({"torch.cuda.default_generators"})

# torch.cuda functions that raise where CUDA is absent (checked on a CPU-only build);
# memory_allocated, empty_cache, manual_seed(_all) and friends are no-ops there, and so is
# ``torch.cuda.stream(s)``: with ``None`` it does nothing, and any real stream was made by
# a call in this list.
CUDA_ONLY_CALLS = frozenset(
    f"torch.cuda.{name}"
    for name in (
        "synchronize", "get_device_name", "get_device_properties", "get_device_capability",
        "current_device", "set_device", "mem_get_info", "current_stream", "default_stream",
        "reset_peak_memory_stats", "memory_summary", "ipc_collect", "get_rng_state",
        "set_rng_state", "initial_seed", "Stream", "Event", "device",
    )
)  # fmt: skip

# Packages that only work with CUDA (kernels, CUDA bindings, CUDA-only frameworks): a module
# that imports one at module level is written for a CUDA machine.
CUDA_ONLY_PACKAGES = frozenset(
    {
        "triton",
        "apex",
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
# Creating CUDA streams: a module that does is written for CUDA.
CUDA_STREAMS = frozenset({"torch.cuda.Stream", "torch.cuda.streams.Stream"})

# Test decorators that skip a test: skipif/skipIf skip when true, skipUnless when false.
SKIP_UNLESS = frozenset({"unittest.skipUnless", "unittest.case.skipUnless"})
SKIP_IF = SKIP_UNLESS | frozenset({"pytest.mark.skipif", "unittest.skipIf", "unittest.case.skipIf"})

# Calls that end the program or the test: code after them on a negated test is guarded.
EXIT_CALLS = frozenset(
    {
        "sys.exit",
        "exit",
        "quit",
        "os._exit",
        "pytest.skip",
        "pytest.exit",
        "self.skipTest",
        "unittest.SkipTest",
    }
)

ACCELERATOR_DEVICE_FUNCTIONS = frozenset({"torch.accelerator.current_accelerator"})

DATA_LOADERS = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
TENSOR_DATASETS = frozenset(
    {"torch.utils.data.TensorDataset", "torch.utils.data.dataset.TensorDataset"}
)

# Names that, unresolved, still mean "a device": the argument of ``.to(device)``.
# torchvision transforms that turn an image (PIL, ndarray) into a tensor, on the CPU: the
# transform objects, their functional forms, and the pipelines that contain one.
IMAGE_TO_TENSOR = frozenset(
    f"torchvision.transforms.{v2}{name}"
    for v2 in ("", "v2.")
    for name in ("ToTensor", "PILToTensor", "ToImage")
)
IMAGE_TO_TENSOR_FUNCTIONS = frozenset(
    f"torchvision.transforms.{v2}functional.{name}"
    for v2 in ("", "v2.")
    for name in ("to_tensor", "pil_to_tensor", "to_image")
)
TRANSFORM_PIPELINES = frozenset(
    {"torchvision.transforms.Compose", "torchvision.transforms.v2.Compose"}
)

DEVICE_NAMES = frozenset({"device", "dev", "devices", "target_device", "accelerator_device"})

# Wrappers around an iterable in a ``for`` statement: ``for x in tqdm(loader)``.
ITERATION_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "trange", "progress_bar", "track"})
# Of those, the ones whose items are the loader's own items (not ``(index, item)``).
LOADER_WRAPPERS = ITERATION_WRAPPERS - {"enumerate"}

TENSOR_FACTORIES = frozenset(
    {
        "zeros",
        "ones",
        "empty",
        "full",
        "arange",
        "range",
        "linspace",
        "logspace",
        "randn",
        "rand",
        "randint",
        "randperm",
        "tensor",
        "as_tensor",
        "eye",
        "from_numpy",
        "zeros_like",
        "ones_like",
        "empty_like",
        "full_like",
        "rand_like",
        "randn_like",
        "randint_like",
        "scalar_tensor",
    }
)


def is_factory(qualname: str) -> bool:
    head, _, name = qualname.rpartition(".")
    return head == "torch" and name in TENSOR_FACTORIES


DTYPES = frozenset(
    f"torch.{name}"
    for name in (
        "float",
        "float16",
        "float32",
        "float64",
        "bfloat16",
        "half",
        "double",
        "int",
        "int8",
        "int16",
        "int32",
        "int64",
        "long",
        "uint8",
        "bool",
        "complex64",
        "complex128",
        "short",
        "cfloat",
        "cdouble",
        "float8_e4m3fn",
        "float8_e5m2",
    )
)

# Namespaces under ``torch`` whose functions do not compute on tensors.
NON_TENSOR_NAMESPACES = (
    "torch.cuda.",
    "torch.backends.",
    "torch.distributed.",
    "torch.utils.",
    "torch.jit.",
    "torch.onnx.",
    "torch.hub.",
    "torch.nn.init.",
    "torch.optim.",
    "torch.autograd.",
    "torch.save",
    "torch.manual_seed",
    "torch.set_",
    "torch.get_",
    "torch.is_",
    "torch.compile",
    "torch.no_grad",
    "torch.inference_mode",
    "torch.enable_grad",
    "torch.amp.",
    "torch.autocast",
    "torch.device",
    "torch.accelerator.",
    "torch.mps.",
    "torch.numel",
    "torch.typename",
    "torch.use_deterministic_algorithms",
)


def is_module_class(qualname: str | None) -> bool:
    """``torch.nn.Linear``-like: a class from ``torch.nn`` (not a function of F)."""
    if not qualname or not qualname.startswith("torch.nn."):
        return False
    if qualname.startswith(("torch.nn.functional.", "torch.nn.init.", "torch.nn.utils.")):
        return False
    leaf = qualname.rsplit(".", 1)[-1]
    return leaf[:1].isupper() and leaf not in ("Parameter", "Buffer", "ParameterList")


STATELESS_MODULES = frozenset(
    {
        "ReLU",
        "ReLU6",
        "LeakyReLU",
        "ELU",
        "SELU",
        "GELU",
        "SiLU",
        "Mish",
        "Sigmoid",
        "Tanh",
        "Softmax",
        "LogSoftmax",
        "Softplus",
        "Hardswish",
        "Hardsigmoid",
        "Identity",
        "Flatten",
        "Unflatten",
        "Dropout",
        "Dropout1d",
        "Dropout2d",
        "Dropout3d",
        "AlphaDropout",
        "MaxPool1d",
        "MaxPool2d",
        "MaxPool3d",
        "AvgPool1d",
        "AvgPool2d",
        "AvgPool3d",
        "AdaptiveAvgPool1d",
        "AdaptiveAvgPool2d",
        "AdaptiveAvgPool3d",
        "AdaptiveMaxPool1d",
        "AdaptiveMaxPool2d",
        "Upsample",
        "PixelShuffle",
        "CosineSimilarity",
        "PairwiseDistance",
    }
)


def is_stateless_module(qualname: str) -> bool:
    """Modules without parameters: their device does not matter (losses, activations)."""
    leaf = qualname.rsplit(".", 1)[-1]
    return leaf.endswith("Loss") or leaf in STATELESS_MODULES


# Wrappers that keep the wrapped module's placement.
WRAPPERS = frozenset(
    {
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.nn.parallel.DistributedDataParallel",
    }
)
# Modules made of other modules: on the device of their parts.
MODULE_CONTAINERS = frozenset({"torch.nn.Sequential", "torch.nn.ModuleList", "torch.nn.ModuleDict"})
# Parameters and buffers move with the module that owns them.
PARAMETER_WRAPPERS = frozenset(
    {
        "torch.nn.Parameter",
        "torch.nn.parameter.Parameter",
        "torch.nn.Buffer",
        "torch.nn.parameter.Buffer",
    }
)

# Methods that move a value: a bare ``model.to(device)`` moves a module in place.
MOVE_METHODS = frozenset({"to", "cuda", "cpu"})

# Module methods that return the module itself.
MODULE_SELF_METHODS = frozenset(
    {
        "eval",
        "train",
        "float",
        "half",
        "double",
        "bfloat16",
        "requires_grad_",
        "share_memory",
        "apply",
        "to_empty",
    }
)

# Tensor attributes that are tensors on the same device.
TENSOR_VIEW_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data", "grad", "real", "imag"})
# Attributes of a tensor that are not tensors (the others, read from a model's output such
# as ``out.logits`` or from ``x.max(dim=1).values``, are on the tensor's device).
NON_TENSOR_ATTRIBUTES = frozenset(
    {
        "shape", "dtype", "device", "ndim", "layout", "names", "requires_grad", "is_leaf",
        "grad_fn", "is_cuda", "is_mps", "is_cpu", "is_sparse", "is_quantized", "is_meta",
        "itemsize", "nbytes", "output_hidden_states", "output_attentions",
    }
)  # fmt: skip

# Tensor methods that give a 0-dim tensor dimensions.
SHAPING_METHODS = frozenset(
    {
        "view", "reshape", "unsqueeze", "expand", "repeat", "flatten", "tile",
        "broadcast_to", "view_as", "expand_as", "reshape_as", "unflatten", "ravel",
    }
)  # fmt: skip

# Tensor methods whose result is not a tensor.
NON_TENSOR_METHODS = frozenset(
    {
        "numpy",
        "item",
        "tolist",
        "size",
        "dim",
        "numel",
        "nelement",
        "stride",
        "data_ptr",
        "get_device",
        "is_contiguous",
        "element_size",
        "is_floating_point",
        "is_complex",
        "storage",
        "untyped_storage",
        "__len__",
        "keys",
        "register_hook",
        "backward",
        "dim_order",
        "ndimension",
    }
)

# Tensor methods that take other tensors without requiring them on the same device.
DEVICE_FREE_METHODS = frozenset(
    {
        "to",
        "copy_",
        "type_as",
        "new_tensor",
        "new_zeros",
        "new_ones",
        "new_empty",
        "new_full",
        "view_as",
        "expand_as",
        "reshape_as",
        "pin_memory",
        "detach",
        "clone",
        "cpu",
        "cuda",
        "items",
        "values",
        "get",
        "float",
        "half",
        "double",
        "long",
        "int",
        "bool",
        "contiguous",
    }
)
