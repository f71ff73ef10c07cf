# source: https://github.com/lucidrains/enformer-pytorch/blob/5a5974d2821c728f93294731c50b55f1f55fd86d/test_pretrained.py
import torch
from enformer_pytorch import from_pretrained

enformer = from_pretrained('EleutherAI/enformer-official-rough', use_tf_gamma = False).cuda() # expect: DEV003
enformer.eval()

data = torch.load('./data/test-sample.pt') # expect: DEV007
seq, target = data['sequence'].cuda(), data['target'].cuda() # expect: DEV003

with torch.no_grad():
    corr_coef = enformer(
        seq,
        target = target,
        return_corr_coef = True,
        head = 'human'
    )

print(corr_coef)
assert corr_coef > 0.1
