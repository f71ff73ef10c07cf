# source: https://github.com/hysts/pytorch_image_classification/blob/993089a3a08b1955914641fa6e88b5ecbbf638af/pytorch_image_classification/utils/op_count.py
from typing import Tuple
import thop
import torch
import torch.nn as nn
import yacs.config


def count_op(config: yacs.config.CfgNode, model: nn.Module) -> Tuple[str, str]:
    data = torch.zeros((1, config.dataset.n_channels,
                        config.dataset.image_size, config.dataset.image_size),
                       dtype=torch.float32,
                       device=torch.device(config.device))
    return thop.clever_format(thop.profile(model, (data, ), verbose=False))
