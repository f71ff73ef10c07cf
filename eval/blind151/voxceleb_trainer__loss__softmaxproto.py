# source: https://github.com/clovaai/voxceleb_trainer/blob/f51bab870672a9b0b50fa158b4e30f329e7866d7/loss/softmaxproto.py

import torch
import torch.nn as nn
import loss.softmax as softmax
import loss.angleproto as angleproto

class LossFunction(nn.Module):

    def __init__(self, **kwargs):
        super().__init__()

        self.test_normalize = True

        self.softmax = softmax.LossFunction(**kwargs)
        self.angleproto = angleproto.LossFunction(**kwargs)

        print('Initialised SoftmaxPrototypical Loss')

    def forward(self, x, label=None):

        assert x.size()[1] == 2

        nlossS, prec1   = self.softmax(x.reshape(-1,x.size()[-1]), label.repeat_interleave(2))

        nlossP, _       = self.angleproto(x,None)

        return nlossS+nlossP, prec1