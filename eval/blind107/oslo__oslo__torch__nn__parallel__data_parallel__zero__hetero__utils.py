# source: https://github.com/EleutherAI/oslo/blob/d7c4e32e766a99cc9d56533bc090570360dc8b2a/oslo/torch/nn/parallel/data_parallel/zero/hetero/utils.py
import torch
import torch.distributed as dist

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from oslo.torch.nn.parallel.data_parallel.zero.hetero.chunk import Chunk


def get_current_device() -> torch.device:
    """
    Returns currently selected device (gpu/cpu).
    If cuda available, return gpu, otherwise return cpu.
    """
    if torch.cuda.is_available(): # expect: DEV004
        return torch.device(f"cuda:{torch.cuda.current_device()}")
    else:
        return torch.device("cpu")


def get_temp_total_chunk_on_cuda(chunk: "Chunk") -> torch.Tensor:
    if chunk.is_gathered:
        return chunk.cuda_global_chunk

    if chunk.cuda_shard is not None:
        shard_temp = chunk.cuda_shard
    else:
        shard_temp = chunk.cpu_shard.to(get_current_device())

    total_temp = torch.zeros(
        chunk.chunk_size, dtype=chunk.dtype, device=get_current_device()
    )
    gather_list = list(torch.chunk(input=total_temp, chunks=chunk.pg_size, dim=0))
    dist.all_gather(tensor_list=gather_list, tensor=shard_temp, group=chunk.torch_pg)

    return total_temp
