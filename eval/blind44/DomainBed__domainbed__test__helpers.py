# source: https://github.com/facebookresearch/DomainBed/blob/b93c22a1cfc3b2428398272c1a116c8de1f4139e/domainbed/test/helpers.py
# Copyright (c) Facebook, Inc. and its affiliates. All Rights Reserved

import torch

DEBUG_DATASETS = ['Debug28', 'Debug224']

def make_minibatches(dataset, batch_size):
    """Test helper to make a minibatches array like train.py"""
    minibatches = []
    for env in dataset:
        X = torch.stack([env[i][0] for i in range(batch_size)]).cuda() # expect: DEV003
        y = torch.stack([torch.as_tensor(env[i][1]) # expect: DEV003
            for i in range(batch_size)]).cuda()
        minibatches.append((X, y))
    return minibatches
