"""The torch semantics table: what each torch API does to placement and kind, as data.

One table per question; the interpreter (``calls.py``, ``expressions.py``) reads them and
holds no API names of its own. ``call_effect`` maps a resolved callee to what the call
does; the method, attribute and module tables below it say the same for tensors and
modules. Where devlint decides from a name rather than a value, it does so in
``name_guesses.py``, the one table of such guesses.
"""

from __future__ import annotations

from enum import Enum

from devlint.analysis import name_guesses
from devlint.analysis.library_api import (
    ACCELERATOR_CLASSES,
    ACCELERATOR_OBJECT,
    ACCELERATOR_PREPARE,
    BOOSTER_CLASSES,
    LIGHTNING_CLASSES,
    NUMPY_FLOAT64,
    NUMPY_FROM_DATA,
    OTHER_RUNTIMES,
    RECORD_CONSTRUCTORS,
)

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
# The device index that means the CPU where libraries take devices as integers
# (``transformers.pipeline(device=-1)``, torchtext's legacy ``BucketIterator(device=-1)``).
CPU_DEVICE_INDEX = -1
# Attributes that are non-empty only where CUDA is available (``len(...) > 0`` tests it).
CUDA_AVAILABILITY_ATTRIBUTES = frozenset({"torch.cuda.default_generators"})

# torch.cuda functions that raise where CUDA is absent (checked on a CPU-only build by
# tests/rules/test_dev011_unguarded_cuda_call.py); memory_allocated, empty_cache,
# manual_seed(_all), set_rng_state (queued until CUDA starts) are no-ops there, and so is
# ``torch.cuda.stream(s)``: with ``None`` it does nothing, and any real stream was made by
# a call in this list. The ``torch.cuda.graph(g)`` context records into a ``CUDAGraph()``
# made by a call in this list, which is reported (one report for one missing check, as
# labellers read it: eval/blind27, blind41).
CUDA_ONLY_CALLS = frozenset(
    f"torch.cuda.{name}"
    for name in (
        "synchronize", "get_device_name", "get_device_properties", "get_device_capability",
        "current_device", "set_device", "mem_get_info", "current_stream", "default_stream",
        "reset_peak_memory_stats", "memory_summary", "ipc_collect", "get_rng_state",
        "initial_seed", "Stream", "Event", "device",
        "reset_max_memory_allocated", "reset_max_memory_cached", "can_device_access_peer",
        "set_per_process_memory_fraction", "caching_allocator_alloc", "init",
        "current_blas_handle", "get_sync_debug_mode", "CUDAGraph", "graph_pool_handle", "cudart", "reset_accumulated_memory_stats",
        "nvtx.range_push", "nvtx.range_pop", "nvtx.range", "nvtx.mark",
        "profiler.start", "profiler.stop",
        # The legacy constructors (``torch.cuda.LongTensor(sizes)``): "type
        # torch.cuda.LongTensor not available. Torch not compiled with CUDA enabled."
        "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor",
        "CharTensor", "ShortTensor", "IntTensor", "LongTensor", "BoolTensor",
    )
)  # fmt: skip

# Calls that return the index of a CUDA device (``torch.device(torch.cuda.current_device())``).
CUDA_INDEX_CALLS = frozenset({"torch.cuda.current_device"})

# Test decorators that skip a test: skipif/skipIf skip when true, skipUnless when false.
SKIP_UNLESS = frozenset({"unittest.skipUnless", "unittest.case.skipUnless"})
SKIP_IF = SKIP_UNLESS | frozenset({"pytest.mark.skipif", "unittest.skipIf", "unittest.case.skipIf"})
# The module-level name whose marks pytest applies to every test of the module.
PYTEST_MODULE_MARKS = "pytestmark"

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
# Context managers that make factories and layers without ``device=`` land on a device.
DEVICE_CONTEXTS = frozenset({"torch.device"})

DATA_LOADERS = frozenset(
    {
        "torch.utils.data.DataLoader",
        "torch.utils.data.dataloader.DataLoader",
        # PyTorch Geometric's loaders batch graphs (``Data``/``HeteroData``) where they are:
        # over a graph moved with ``data.to(device, "x", "y")``, batches are on the device.
        "torch_geometric.loader.DataLoader",
        "torch_geometric.loader.NeighborLoader",
        "torch_geometric.loader.LinkNeighborLoader",
        "torch_geometric.loader.ClusterLoader",
        "torch_geometric.loader.DenseDataLoader",
        "torch_geometric.data.DataLoader",
        # DGL's loaders make each batch's graphs (MFGs) on their ``device=``, else where the
        # graph is; ``GraphDataLoader`` batches a dataset's graphs where they are.
        "dgl.dataloading.DataLoader",
        "dgl.dataloading.NodeDataLoader",
        "dgl.dataloading.EdgeDataLoader",
        "dgl.dataloading.GraphDataLoader",
    }
)
# Map-style datasets: a subclass defined in the file yields what its ``__getitem__`` returns.
DATASET_CLASSES = frozenset({"torch.utils.data.Dataset", "torch.utils.data.dataset.Dataset"})
TENSOR_DATASETS = frozenset(
    {"torch.utils.data.TensorDataset", "torch.utils.data.dataset.TensorDataset"}
)

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


# The factories DEV013 and DEV014 name: tensors made from nothing but sizes and literals.
# ``from_numpy``, ``as_tensor`` and the ``*_like`` ones take their data, or their device,
# from another object.
NAMED_FACTORIES = frozenset(
    {"zeros", "ones", "empty", "full", "arange", "randn", "rand", "tensor", "eye"}
)
# Factories whose tensor always has one dimension (``values.Value.vector``).
ONE_DIMENSION_FACTORIES = frozenset({"arange", "range", "linspace", "logspace", "randperm"})
# Legacy tensor types (``x.type(torch.cuda.FloatTensor)``, ``torch.cuda.FloatTensor(3)``):
# the CUDA ones place on CUDA, the others on the CPU.
LEGACY_TENSOR_TYPES = frozenset(
    {
        "FloatTensor", "DoubleTensor", "HalfTensor", "BFloat16Tensor", "ByteTensor",
        "CharTensor", "ShortTensor", "IntTensor", "LongTensor", "BoolTensor",
    }
)  # fmt: skip

# DEV014's "or another factory": the other factories that make a tensor from sizes and
# literals alone (nerf_pl's ``self.freq_bands = 2 ** torch.linspace(0, n - 1, n)``,
# eval/blind46), and the legacy constructors, CPU tensors (PSMNet's ``self.disp =
# torch.Tensor(...)``, eval/blind144; pytorch-soft-actor-critic's ``self.action_scale =
# torch.FloatTensor(...)``, blind161; they take no ``device=`` of another kind, so DEV013
# leaves them alone). ``torch.cuda.FloatTensor`` is no CPU tensor: its head is not ``torch``.
STATE_FACTORIES = (
    NAMED_FACTORIES
    | {"Tensor", "linspace", "logspace", "range", "randint", "randperm", "scalar_tensor"}
    | LEGACY_TENSOR_TYPES
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
    "torch.distributions.",  # a distribution object, not a tensor (its samples are)
    "torch.finfo",
    "torch.iinfo",
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


def is_layer_class(qualname: str) -> bool:
    """A ``torch.nn`` class that has parameters of its own (``nn.Linear``, ``nn.Conv2d``;
    not ``nn.Module`` nor the containers and wrappers, whose parameters are their parts':
    a subclass of ``nn.DataParallel`` is where the module it wraps is)."""
    return (
        is_module_class(qualname)
        and qualname.rsplit(".", 1)[-1] not in ("Module", *_CONTAINER_LEAVES)
        and qualname not in WRAPPERS | DISTRIBUTED_WRAPPERS
        and not is_stateless_module(qualname)
    )


_CONTAINER_LEAVES = ("Sequential", "ModuleList", "ModuleDict", "ParameterDict")


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
        *(
            f"{kind}Pad{n}d"
            for kind in ("Zero", "Constant", "Reflection", "Replication", "Circular")
            for n in (1, 2, 3)
        ),
        "PixelUnshuffle", "ChannelShuffle", "Fold", "Unfold", "Softmin", "Softmax2d",
        "Softsign", "Tanhshrink", "Hardtanh", "Threshold", "GLU", "LogSigmoid", "Hardshrink",
        "Softshrink", "CELU", "RReLU", "UpsamplingNearest2d", "UpsamplingBilinear2d",
        "LPPool1d", "LPPool2d", "AdaptiveMaxPool3d", "LocalResponseNorm", "FeatureAlphaDropout",
    }
)  # fmt: skip


def is_stateless_module(qualname: str) -> bool:
    """Modules without parameters: their device does not matter (losses, activations)."""
    leaf = qualname.rsplit(".", 1)[-1]
    return name_guesses.is_loss_class_name(leaf) or leaf in STATELESS_MODULES


# Methods that place what they are called on: ``part.to(device)``, ``part.cuda()``.
PLACING_METHODS = frozenset({"to", "cuda", "mps", "xpu"})
# Wrappers that keep the wrapped module's placement.
WRAPPERS = frozenset(
    {
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.nn.parallel.data_parallel.DataParallel",
        "torch.nn.parallel.DistributedDataParallel",
    }
)
# Wrappers that run one process per device, given as ``device_ids=[index]``; given one, the
# wrapper moves its inputs to that device (without, they stay where they are).
DISTRIBUTED_WRAPPERS = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
    }
)
# Wrappers that scatter their inputs to the CUDA devices they run on, from wherever the
# inputs are (``nn.DataParallel(model).cuda()(cpu_batch)`` works). Without CUDA they call
# the module as it is: on MPS a CPU input still mixes.
SCATTERING_WRAPPERS = frozenset(
    {
        "torch.nn.DataParallel",
        "torch.nn.parallel.DataParallel",
        "torch.nn.parallel.data_parallel.DataParallel",  # where the class is defined
    }
)
# Module values whose calls move their inputs: the scattering wrappers, and the distributed
# ones made with ``device_ids`` (``Effects.module`` keeps the callee's name only then).
# A class from elsewhere named for data parallelism (``name_guesses.names_a_data_parallel``).
NAMED_DATA_PARALLEL = "DataParallel (a class named for it)"
INPUT_MOVING_WRAPPERS = SCATTERING_WRAPPERS | DISTRIBUTED_WRAPPERS | {NAMED_DATA_PARALLEL}
# Objects of a class named for a diffusion pipeline (``name_guesses.names_a_pipeline``): on
# whatever device they run, they move the tensors they are given there.
NAMED_PIPELINE = "a diffusion pipeline (a class named for it)"
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

# Module methods that iterate over its tensors, each on the module's device
# (``next(model.parameters()).device``).
MODULE_TENSOR_ITERATORS = frozenset({"parameters", "buffers"})

# Tensor attributes that are tensors on the same device.
TENSOR_VIEW_ATTRIBUTES = frozenset({"T", "mT", "H", "mH", "data", "grad", "real", "imag"})
# Attributes of a tensor that are not tensors (the others, read from a model's output such
# as ``out.logits`` or from ``x.max(dim=1).values``, are on the tensor's device).
NON_TENSOR_ATTRIBUTES = frozenset(
    {
        "shape", "dtype", "device", "ndim", "layout", "names", "requires_grad", "is_leaf",
        "grad_fn", "is_cuda", "is_mps", "is_cpu", "is_sparse", "is_quantized", "is_meta",
        "itemsize", "nbytes", "output_hidden_states", "output_attentions",
        # a diffusers pipeline's output: PIL images / NumPy arrays unless ``output_type="pt"``
        "images", "frames", "audios",
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

# ``nn.Module`` methods that ``torch.Tensor`` does not have: a receiver taken for a tensor
# (an object of unknown kind moved with ``.to(device)``) that calls one is a module, and
# the call combines nothing (``model.load_state_dict(cpu_state)`` copies into place).
# (Those without arguments that return the module, ``eval``, ``train``, keep its place.)
MODULE_ONLY_METHODS = frozenset(
    {
        "load_state_dict",
        "state_dict",
        "named_parameters",
        "named_buffers",
        "named_children",
        "named_modules",
        "children",
        "modules",
        "zero_grad",
        "register_buffer",
        "register_parameter",
        "register_module",
        "add_module",
        "get_submodule",
        "get_parameter",
        "get_buffer",
        "register_forward_hook",
        "register_forward_pre_hook",
        "register_full_backward_hook",
        "extra_repr",
    }
)

# Python builtins whose result is never a tensor, whatever they are given (``len(batch)``
# is an int: multiplying a CUDA loss by it mixes nothing). ``abs``, ``max``, ``min``,
# ``sum``, ``round`` and ``pow`` are not here: given tensors, they return tensors.
NON_TENSOR_BUILTINS = frozenset(
    {
        "len", "int", "float", "bool", "str", "repr", "format", "isinstance", "issubclass",
        "hasattr", "callable", "id", "hash", "type", "print", "range", "open", "ord", "chr",
        "hex", "bin", "oct", "dir", "vars", "input", "complex", "bytes",
    }
)  # fmt: skip

# In-place fills: how many leading positional arguments must share the tensor's device
# (the fill value may be a 0-dim tensor on any device).
FILL_METHODS = {
    "fill_": 0, "fill_diagonal_": 0, "masked_fill": 1, "masked_fill_": 1,
    "index_fill": 2, "index_fill_": 2,
}  # fmt: skip

# Torch calls (and the modules that make them) that take some tensor arguments on the
# host: how many leading positional arguments must share the device. The CTC loss reads
# its targets and lengths from CPU tensors (cuDNN's path requires them there), and so
# does Baidu's warp-ctc binding (crnn.pytorch, eval/blind150), whose labels must be there.
HOST_ARGUMENT_CALLS = {
    "torch.nn.CTCLoss": 1, "torch.nn.functional.ctc_loss": 1, "torch.ctc_loss": 1,
    "warpctc_pytorch.CTCLoss": 1,
}  # fmt: skip

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


def legacy_tensor_type(qualname: str | None) -> str | None:
    """``cuda`` for ``torch.cuda.FloatTensor``, ``cpu`` for ``torch.FloatTensor``, else None."""
    if not qualname:
        return None
    head, _, leaf = qualname.rpartition(".")
    if leaf not in LEGACY_TENSOR_TYPES:
        return None
    return {"torch.cuda": "cuda", "torch": "cpu"}.get(head)


# ``torch.Tensor`` as a type is the default tensor type, a CPU one (``x.type(torch.Tensor)``
# and ``torch.Tensor(3)`` make CPU float tensors): read so opposite a legacy type
# (``torch.cuda.FloatTensor if cuda else torch.Tensor``), a class anywhere else.
DEFAULT_TENSOR_TYPE = "torch.Tensor"


# Wrappers that return their tensor argument (``Variable(x)``: a tensor since torch 0.4).
IDENTITY_WRAPPERS = frozenset({"torch.autograd.Variable", "torch.autograd.variable.Variable"})


class Effect(Enum):
    """What a call of a torch (or torchvision) API does, for the interpreter."""

    AVAILABILITY = "availability"  # a guard value (``torch.cuda.is_available()``)
    SKIP_DECORATOR = "skip"  # ``pytest.mark.skipif(not ...)``: a guard when its test is one
    DEVICE = "device"  # ``torch.device(...)``
    ACCELERATOR = "accelerator"  # ``torch.accelerator.current_accelerator()``: any device
    LOADER = "loader"  # a DataLoader: batches on the CPU unless its dataset was moved
    TENSOR_DATASET = "dataset"  # ``TensorDataset(...)``: where its tensors are
    LOADER_WRAPPER = "loader wrapper"  # ``tqdm(loader)`` is still the loader
    IMAGE_TO_TENSOR = "image to tensor"  # ``TF.to_tensor(img)``: a CPU tensor
    TRANSFORM = "transform"  # ``T.ToTensor()``/``T.Compose([...])``: returns CPU tensors
    LOAD = "load"  # ``torch.load``: where ``map_location`` says
    MODULE = "module"  # an ``nn`` module class: a module on the CPU (or ``device=``)
    PARAMETER = "parameter"  # ``nn.Parameter(x)``: lives wherever its module is moved
    FACTORY = "factory"  # a tensor factory: on the CPU unless ``device=``
    IDENTITY = "identity"  # ``Variable(x)``: x
    LEGACY_TYPE = "legacy type"  # ``torch.cuda.FloatTensor(...)``: a tensor there
    OPERATION = "operation"  # any other ``torch.*`` function: combines its tensor operands
    NUMPY = "numpy"  # a NumPy function: an array, float64 where NumPy's default says so
    DEFAULT_DEVICE = "default device"  # ``torch.set_default_device(d)``: factories land on d
    DEFAULT_DTYPE = "default dtype"  # ``torch.set_default_dtype(t)``: floating factories are t
    DEFAULT_TENSOR_TYPE = "default tensor type"  # ``set_default_tensor_type(T)``: both
    ACCELERATE = "accelerate"  # ``accelerate.Accelerator()``, ``Booster()``: objects that place
    PREPARE = "prepare"  # ``accelerator.prepare(model, loader)``: each on its device
    LIGHTNING = "lightning"  # ``L.Fabric(accelerator="cuda")``: places; may require CUDA
    IMPORT = "import"  # ``torch = pytest.importorskip("torch")``: the module named


_EXACT_EFFECTS: dict[str, Effect] = {
    **dict.fromkeys(CUDA_AVAILABILITY, Effect.AVAILABILITY),
    **dict.fromkeys(SKIP_IF, Effect.SKIP_DECORATOR),
    "torch.device": Effect.DEVICE,
    **dict.fromkeys(ACCELERATOR_DEVICE_FUNCTIONS, Effect.ACCELERATOR),
    **dict.fromkeys(DATA_LOADERS, Effect.LOADER),
    **dict.fromkeys(TENSOR_DATASETS, Effect.TENSOR_DATASET),
    **dict.fromkeys(IMAGE_TO_TENSOR_FUNCTIONS, Effect.IMAGE_TO_TENSOR),
    **dict.fromkeys(IMAGE_TO_TENSOR | TRANSFORM_PIPELINES, Effect.TRANSFORM),
    "torch.load": Effect.LOAD,
    "pytest.importorskip": Effect.IMPORT,
    "importlib.import_module": Effect.IMPORT,
    **dict.fromkeys(PARAMETER_WRAPPERS, Effect.PARAMETER),
    **dict.fromkeys(IDENTITY_WRAPPERS, Effect.IDENTITY),
    **dict.fromkeys(ACCELERATOR_CLASSES | BOOSTER_CLASSES, Effect.ACCELERATE),
    **dict.fromkeys(ACCELERATOR_PREPARE, Effect.PREPARE),
    **dict.fromkeys(LIGHTNING_CLASSES, Effect.LIGHTNING),
    f"{ACCELERATOR_OBJECT}.unwrap_model": Effect.IDENTITY,
    f"{ACCELERATOR_OBJECT}.skip_first_batches": Effect.IDENTITY,  # the prepared loader
    # collectives across processes: the tensors come back on the device they were on
    **{
        f"{ACCELERATOR_OBJECT}.{name}": Effect.IDENTITY
        for name in ("gather", "gather_for_metrics", "reduce", "pad_across_processes")
    },
    # the gradients, each where its input is (one device for all, as autograd requires)
    "torch.autograd.grad": Effect.OPERATION,
    "torch.set_default_device": Effect.DEFAULT_DEVICE,
    "torch.set_default_dtype": Effect.DEFAULT_DTYPE,
    "torch.set_default_tensor_type": Effect.DEFAULT_TENSOR_TYPE,
}

# Factories whose dtype is the default floating dtype when ``dtype=`` is not given (the
# others take it from their data or make integers: ``arange``, ``randint``, ``tensor``).
DEFAULT_DTYPE_FACTORIES = frozenset(
    {"zeros", "ones", "empty", "rand", "randn", "linspace", "logspace", "eye"}
)


def call_effect(callee: str) -> Effect | None:
    """What calling ``callee`` (a resolved qualified name) does; None: nothing known."""
    effect = _EXACT_EFFECTS.get(callee)
    if effect is not None:
        return effect
    if callee.rsplit(".", 1)[-1] in name_guesses.LOADER_WRAPPERS:
        return Effect.LOADER_WRAPPER
    if name_guesses.names_a_data_loader_class(callee):
        return Effect.LOADER
    if legacy_tensor_type(callee) is not None or callee == DEFAULT_TENSOR_TYPE:
        return Effect.LEGACY_TYPE
    if is_module_class(callee) or (  # ``nn.Embedding.from_pretrained(weights)``
        callee.endswith(".from_pretrained") and is_module_class(callee.rsplit(".", 1)[0])
    ):
        return Effect.MODULE
    if is_factory(callee):
        return Effect.FACTORY
    if callee.startswith("torch.") and not callee.startswith(NON_TENSOR_NAMESPACES):
        return Effect.OPERATION
    if callee in NUMPY_FLOAT64 or callee in NUMPY_FROM_DATA:
        return Effect.NUMPY
    return None


# dtypes that are float64 (``float`` is NumPy's float64 in ``astype(float)``).
FLOAT64_DTYPES = frozenset(
    {"torch.float64", "torch.double", "numpy.float64", "numpy.double", "float", "float64"}
)
# Tensor methods that set the dtype: True for float64.
DTYPE_METHODS = {
    "double": True, "float": False, "half": False, "bfloat16": False, "int": False,
    "long": False, "short": False, "bool": False, "byte": False, "char": False,
}  # fmt: skip


def places_by_keyword(callee: str | None) -> bool:
    """Whether ``device=`` / ``map_location=`` of a call place something: any call but a
    torch API that computes nothing (``torch.amp.GradScaler(device=...)``, ``autocast``)
    and a record (``dict(device="cuda")``, ``types.SimpleNamespace``)."""
    if callee is None:
        return True
    if callee in RECORD_CONSTRUCTORS or callee.startswith(OTHER_RUNTIMES):
        return False
    return not callee.startswith("torch.") or call_effect(callee) is not None
