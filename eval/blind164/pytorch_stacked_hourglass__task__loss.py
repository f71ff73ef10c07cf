# source: https://github.com/princeton-vl/pytorch_stacked_hourglass/blob/ceedc14b9b8814ba641f4a00baa5d0af153588a9/task/loss.py
import torch

class HeatmapLoss(torch.nn.Module):
    """
    loss for detection heatmap
    """
    def __init__(self):
        super(HeatmapLoss, self).__init__()

    def forward(self, pred, gt):
        l = ((pred - gt)**2)
        l = l.mean(dim=3).mean(dim=2).mean(dim=1)
        return l ## l of dim bsize