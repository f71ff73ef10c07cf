"""Name guesses: the one place where the analysis decides from weak evidence.

Where no value is known, a name, a default or a missing definition decides. Each such
decision is here, with the evidence for it (the eval set or corpus that needed it);
nothing else in the analysis reads names to learn what a value is, and everywhere else
what is not known stays unknown (issue 27: never "tensor", "CPU" or "unguarded" by
default). The API semantics themselves are data in ``torch_api.py``.
"""

from __future__ import annotations

import re
from collections.abc import Container

# Unresolved names that still mean "a device" (``.to(device)``, ``def f(x, device)``,
# ``args.device``): the argument of a move is a device in every corpus read so far.
DEVICE_NAMES = frozenset({"device", "dev", "devices", "target_device", "accelerator_device"})


def is_device_like_name(name: str) -> bool:
    last = name.rsplit(".", 1)[-1].lower()
    return last in DEVICE_NAMES or last.endswith("_device") or last.startswith("device_")


def names_an_accelerator(name: str) -> bool:
    """``accelerator = "gpu" if torch.cuda.is_available() else "cpu"``: the name a
    trainer's accelerator is kept in before it reaches ``Trainer(accelerator=...)``, at
    once or through a dict of trainer options (eval/blind91: lightly's benchmark and CLI).
    Only an availability choice between ``"gpu"`` and the CPU reads it."""
    return name.rsplit(".", 1)[-1].lower() == "accelerator"


# Arguments named for lengths or sizes are host-side metadata that a call may take on the
# CPU with its data on the device: ``pack_padded_sequence(x, lengths)``,
# ``ctc_loss(log_probs, targets, input_lengths, target_lengths)`` (eval/heldout: CTC
# ``input_lens``; eval/blind9: deep-text-recognition's ``preds_size``).
_LENGTH_NAME = re.compile(r"(?<![a-z])(len|lens|lengths?|sizes?)(?![a-z])")


def names_lengths(source: str) -> bool:
    return bool(_LENGTH_NAME.search(source.lower()))


# A batch element of an unseen dataset named for raw text (lxmert's ``for ques_id, feats,
# boxes, sent, target in loader: self.model(feats, boxes, sent)``, eval/blind136): the
# default collate leaves strings as lists, and a model that takes them tokenizes them
# itself. Read only for an element passed to a model, never for one that meets tensors in
# arithmetic or a loss.
_TEXT_NAME = re.compile(
    r"(?<![a-z])(sents?|sentences?|texts?|captions?|questions?|ques|prompts?|quer(y|ies))"
    r"(?![a-z])"
)


def names_raw_text(source: str) -> bool:
    return bool(_TEXT_NAME.search(source.lower()))


# A script near the file that sets ``args.use_gpu = True if torch.cuda.is_available() and
# args.use_gpu else False`` on its parsed options makes ``args.use_gpu`` an availability flag
# in the file too (``project_flags.py``; Informer, Autoformer, PatchTST: eval/blind60,
# blind61): the same namespace and attribute names are the only link between the two.
# So for a module a script imports and sets a flag on (``cuda.CUDA_ENABLED =
# use_cuda and torch.cuda.is_available()``, pytext: eval/blind125): the flag is
# ``cuda.CUDA_ENABLED`` where another file imports the module as ``cuda``, and the bare
# ``CUDA_ENABLED`` in the file named ``cuda.py`` itself. And for a settings object the
# script builds from a class, known by its capital letter (``data = Data()``, then
# ``data.HP_gpu = torch.cuda.is_available()``; NCRFpp, eval/blind141): ``data.HP_gpu``.
#
# An attribute chain that ends in a known availability flag is that flag:
# ``self.args.cuda`` in a trainer's methods after ``self.args = args``, where the script
# set ``args.cuda = not args.no_cuda and torch.cuda.is_available()`` (eval/blind9: the
# deeplab trainer; the object holding the namespace is not tracked through ``self``).
def aliased_flag(key: str, flags: Container[str]) -> str | None:
    """The known flag (``args.cuda``) that ``key`` (``self.args.cuda``) ends with."""
    parts = key.split(".")
    for start in range(1, len(parts) - 1):
        suffix = ".".join(parts[start:])
        if suffix in flags:
            return suffix
    return None


# ``for x, y in train_loader`` where the loader comes from another file: loops over a
# name with ``loader`` (or ``*_dl``) iterate over batches (tutorials, eval/scripts).
def is_loader_like_name(name: str) -> bool:
    last = name.rsplit(".", 1)[-1].lower()
    return "loader" in last or last in ("dl", "train_dl", "val_dl", "test_dl", "valid_dl")


# Objects whose ``.device`` is the run's chosen device (``self.device``, ``args.device``),
# and the sections of a configuration (``cfg.algorithm.device``: salina's hydra configs);
# not the parts of an object (``self.encoder.device`` is the encoder's, unknown).
SETTINGS_HOLDERS = frozenset(
    {
        "self", "cls", "args", "opt", "opts", "options", "config", "cfg", "conf", "hparams",
        "hp", "settings", "params", "trainer", "accelerator", "state",
    }
)  # fmt: skip


def holds_settings(name: str) -> bool:
    """Whether the dotted ``name`` is a settings holder or a section of a configuration."""
    last, root = name.rsplit(".", 1)[-1].lower(), name.split(".", 1)[0].lower()
    return last in SETTINGS_HOLDERS or (root in SETTINGS_HOLDERS and root not in ("self", "cls"))


# An unknown callable named like a loss (``criterion(out, y)``) combines its inputs
# like a stateless module: losses have no parameters (tutorials, heldout sets).
def is_loss_like_name(name: str) -> bool:
    last = name.rsplit(".", 1)[-1].lower()
    return "loss" in last or "criterion" in last


# ``rewards = torch.tensor(r)``: a plural target name holds several numbers, not a 0-dim
# tensor that would mix with any device (eval/heldout3 REINFORCE script).
def names_a_sequence(name: str) -> bool:
    last = name.rsplit(".", 1)[-1].lower()
    plural = last.endswith("s") and not last.endswith(("ss", "us", "is"))
    return plural or last.endswith(("list", "_seq", "array", "_arr"))


# Helpers such as ``is_torch_cuda_available()`` or ``has_cuda()`` defined in other files
# are availability checks (transformers, accelerate).
GUARD_FUNCTION_NAME = re.compile(r"^(is_)?(torch_)?(cuda|gpu)(_is)?_available$|^has_(cuda|gpu)$")
# Their MPS twins (transformers' ``is_torch_mps_available()``, accelerate's
# ``is_mps_available()``) test MPS: a choice that tries one has not skipped it
# (LLaMA-Factory's npu → mps → cuda → cpu chain: stop 37's corpus sweep).
MPS_GUARD_FUNCTION_NAME = re.compile(r"^(is_)?(torch_)?mps(_is)?_available$|^has_mps$")


# ``x.to(spec.dtype)``, ``x.to(self.compute_dtype)``: an argument named for a dtype casts
# (eval/heldout4 factory cast).
def names_a_dtype(name: str) -> bool:
    return name.rsplit(".", 1)[-1].endswith("dtype")


# Star imports (``from torch.nn import *``): packages whose exported names are resolved, and
# which of several star-imported modules an unbound name comes from. ``torch.nn`` exports
# the module classes (capitalised: ``Linear``), the others functions (``randn``) — torch's
# own naming convention, seen in the tutorials that star-import both.
STAR_RESOLVED_PACKAGES = frozenset({"torch", "numpy"})

# A name that nothing in the file binds, after ``from models import *`` of a module that
# could not be read: the package a star import of user code passes on under that name
# (its own ``import torch``). pytorch-semantic-segmentation's ``eval_voc.py`` calls
# ``torch.load`` with no import of torch but ``from models import *`` (eval/blind15).
STAR_EXPORTED_PACKAGES = {"torch": "torch"}


def star_import_source(name: str, modules: list[str]) -> str:
    """The star-imported module (the last that fits) an unbound ``name`` comes from."""
    fitting = [m for m in modules if m.endswith(".nn") == name[:1].isupper()]
    return (fitting or modules)[-1]


def is_private_name(name: str) -> bool:
    """A function named with a leading underscore is private to its module: no caller
    elsewhere omits its arguments, so its own defaults only matter where the file calls it
    without them (timm ``_get_pixels(..., device='cuda')``, always given the device)."""
    return name.startswith("_")


# ``torch.__version__``, ``is_torch_version(...)``, ``TORCH_VERSION``,
# ``_TORCH_GREATER_EQUAL_2_4``, ``TORCH_1_10``: names that test the torch release, whose
# branches are compatibility code for another torch (transformers, accelerate, lightning;
# ``facts.tests_torch_version``).
VERSION_NAME = re.compile(r"version|torch\w*(\d|greater|less|newer|older)", re.IGNORECASE)


# ``backend == Backend.CUDA``, ``distributed_type == DistributedType.MULTI_GPU``: an
# upper-case constant named for CUDA is that backend (accelerate's enums; guards.py).
_CUDA_CONSTANT = re.compile(r"cuda|gpu", re.IGNORECASE)


def names_cuda_constant(leaf: str) -> bool:
    return bool(_CUDA_CONSTANT.search(leaf)) and leaf.isupper()


# ``device == th.device("cpu")``: a call whose callee's name ends in ``device`` builds the
# device its string names, through any alias of torch (``th``, cleanrl) or a helper
# (``get_device("cuda")``; guards.placement_test).
def names_device_constructor(name: str) -> bool:
    return name.endswith("device")


# A module class named ``...Loss`` computes a loss: no parameters of its own, so its
# placement does not matter (torch's own losses all are, ``torch_api.is_stateless_module``;
# this file's, ``definitions.py``: tutorials' ``FocalLoss``).
def is_loss_class_name(name: str) -> bool:
    return name.endswith("Loss")


# Wrappers around an iterable in a ``for`` statement, whatever module they come from
# (``tqdm(loader)``, rich's ``track(loader)``, accelerate's ``progress_bar``): they yield
# the wrapped iterable's items (``enumerate``: with an index).
ITERATION_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "trange", "progress_bar", "track"})
# Of those, the ones whose items are the loader's own items (not ``(index, item)``).
LOADER_WRAPPERS = ITERATION_WRAPPERS - {"enumerate"}


# A class from another library named ``...DataLoader`` (speechbrain's
# ``SaveableDataLoader``) is a DataLoader: its batches are where its dataset's items are
# (a tensor made on the device yields device items: stop 37's sweep of speechbrain).
def names_a_data_loader_class(qualname: str) -> bool:
    return qualname.rsplit(".", 1)[-1].endswith("DataLoader")


# An unknown callable (a parameter ``model``, ``self.net``, a function from another file)
# given tensors that may be on an accelerator returns a result there (a model called on
# device inputs: every tutorial); one named for the host (``convert2cpu``, ``to_numpy``,
# pytorch-YOLOv4: eval/blind17) returns a result whose placement is not known.
_HOST_CONVERTER = re.compile(r"cpu|numpy|host", re.IGNORECASE)


def follows_its_inputs(callee_name: str) -> bool:
    return not _HOST_CONVERTER.search(callee_name.rsplit(".", 1)[-1])


# A callable of unknown kind named like a class (``ModelClass(conf)``, ``Net(args)``, a
# classmethod's ``cls(...)``) constructs an object: not a result on its inputs' device
# (coqui TTS's bark loader, ``model = ModelClass(gptconf); model.to(device)``: stop 37's
# corpus sweep). PEP 8 names classes in CapWords.
def names_a_class(callee_name: str) -> bool:
    leaf = callee_name.rsplit(".", 1)[-1]
    return leaf == "cls" or (leaf[:1].isupper() and any(c.islower() for c in leaf))


# A method named ``to`` or ``_apply`` (a class overriding torch's) forwards to
# ``Module.to``/``Tensor.to``: the placements it makes are its callers' to guard, not its
# own (DEV003, since the first engine); a ``cuda`` override forwards only through
# ``super().cuda()`` (facts.forwards_placement). A custom batch's ``pin_memory`` is the
# hook the DataLoader calls only when asked to pin: its pins are the loader's (DEV005;
# mmf's ``SampleList``: eval/blind39).
FORWARDING_METHODS = frozenset({"cuda", "to", "_apply", "pin_memory"})


def forwards_placement(function_name: str) -> bool:
    return function_name in FORWARDING_METHODS


# ``if not torch.cuda.is_available(): raise RuntimeError("... requires a GPU")``: a refusal
# whose message names CUDA (or a GPU) in words says the code is written for CUDA
# (transformers' deepgemm/msa integrations: DEV011, guards.refusal_names_cuda).
_NAMES_CUDA = re.compile(r"\b(?:cuda|gpu)\b", re.IGNORECASE)


def message_names_cuda(text: str) -> bool:
    return bool(_NAMES_CUDA.search(text))


# A call without arguments that asks which process this is (``dist.is_primary()``,
# ``is_main_process()``, ``dist.get_rank()``): fixed for the whole run, so a loop branch
# on it runs on every iteration of that process, as ``if accelerator.is_main_process:``
# does (DEV012; READING's non-periodic conditions; vq-vae-2's ``train_vqvae.py``,
# eval/blind48). ``get_rank``/``get_world_size`` are torch.distributed's own.
_PROCESS_QUERY = re.compile(
    r"^is_(local_)?(main|master|primary|rank_?zero)(_process|_proc|_rank|_worker)?$"
    r"|^(main|master|primary)_(process|proc|rank|worker)$|^get_(local_)?(rank|world_size)$"
)


def asks_which_process(callee_name: str) -> bool:
    return bool(_PROCESS_QUERY.match(callee_name.rsplit(".", 1)[-1]))


# A class from elsewhere named for data parallelism (encoding's ``DataParallelModel`` and
# ``DataParallelCriterion``, mmcv's ``MMDataParallel``, NVIDIA semantic-segmentation's
# ``MyDataParallel``): a ``DataParallel`` subclass that scatters its inputs to the CUDA
# devices as ``nn.DataParallel`` does (eval/blind53, READING's DataParallel rules).
def names_a_data_parallel(callee_name: str) -> bool:
    return "DataParallel" in callee_name.rsplit(".", 1)[-1]


# A class from elsewhere named for a diffusion pipeline (diffusers' ``StableDiffusionPipeline``,
# PhotoMaker's ``PhotoMakerStableDiffusionXLPipeline``, InstantID's): its instances (made
# directly or with ``from_pretrained``, or a parameter annotated with one: Marigold's
# ``model: MarigoldDepthPipeline``) move the tensors they are given to their execution
# device, as diffusers' pipelines do (eval/blind68: PhotoMaker's CPU ``id_embeds``).
def names_a_pipeline(callee_name: str) -> bool:
    parts = callee_name.split(".")
    if len(parts) > 1 and parts[-1] == "from_pretrained":
        parts = parts[:-1]
    return parts[-1].endswith("Pipeline") and parts[-1][:1].isupper()


# ``scheduler.step()``, ``lr_scheduler.step()``: a learning-rate scheduler's step. An ``if``
# whose body steps only a scheduler is no gate of the optimizer's step (DEV012's gradient
# accumulation gates; open-instruct's ``reward_modeling.py``, eval/blind72).
def names_a_scheduler(receiver_name: str) -> bool:
    return "sched" in receiver_name.rsplit(".", 1)[-1].lower()


# ``env.step(action)``, ``envs.step(...)``, ``self.env.step(a)``: an environment's step in
# an RL rollout (DEV012: a loop that steps one hands actions over, per environment step;
# ``fixtures/DEV012/good_rollout_env_step.py``, eval/blind69's A2C).
def names_an_environment(receiver_name: str) -> bool:
    last = receiver_name.rsplit(".", 1)[-1].lower()
    return last in ("env", "envs", "environment", "vec_env", "train_env", "eval_env")


# Not a name, but a guess of the same kind, kept here with the others: a function whose body
# devlint cannot read (another package's ``mse_loss``, a project module not found), given
# tensors that may be on an accelerator (or a ``device=`` keyword: ``TensorDict(...,
# device=device)``, eval/blind117), returns what it computed there; so does a method of a
# moved object whose class devlint cannot read (``methods._computed_by_moved``). The evidence is
# the labelled sets' training loops (+46 DEV012 labels, no false positive; eval/README.md,
# stop 42). It stays an inference (``Value.computed_from``): a host sync on it is reported
# (DEV012), a mismatch (DEV006) or a NumPy conversion (DEV001) of it is not, and what is
# unpacked from it is too (``fixtures/DEV006/good_values_from_another_package.py``). The
# guess is made in ``Calls.library_call``.
