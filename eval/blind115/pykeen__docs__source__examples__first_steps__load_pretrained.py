# source: https://github.com/pykeen/pykeen/blob/05c7bbb20c952f3e5e958e694344ace4005b1bbb/docs/source/examples/first_steps/load_pretrained.py
"""Load a trained PyKEEN model."""

import torch

my_pykeen_model = torch.load("trained_model.pkl") # expect: DEV007
