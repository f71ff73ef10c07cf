#!/usr/bin/env python
# coding: utf-8

# In[1]:


import time

import matplotlib.pyplot as plt
import torch
from PIL import Image
from torchvision.models import ResNet50_Weights, resnet50


# In[2]:


device = (
    "cuda" if torch.cuda.is_available()
    else "mps" if torch.backends.mps.is_available()
    else "cpu"
)
print(f"Using {device} device")


# In[3]:


weights = ResNet50_Weights.DEFAULT
model = resnet50(weights=weights).to(device).eval()
preprocess = weights.transforms()
categories = weights.meta["categories"]


# In[4]:


img = Image.open("dog.jpg").convert("RGB")
batch = preprocess(img).unsqueeze(0).to(device)
with torch.inference_mode():
    logits = model(batch)
probs = logits.softmax(dim=1).squeeze(0).cpu()
top5 = probs.topk(5)
for p, idx in zip(top5.values.tolist(), top5.indices.tolist()):
    print(f"{categories[idx]:>25s}: {p:.3f}")


# In[5]:


activations = {}


def save_activation(module, inputs, output):
    activations["layer4"] = output.detach().cpu()


handle = model.layer4.register_forward_hook(save_activation)
with torch.no_grad():
    model(batch)
handle.remove()

fmap = activations["layer4"][0].mean(0).numpy()
plt.imshow(fmap, cmap="viridis")
plt.title("mean layer4 activation")
plt.show()


# In[6]:


n = 20
with torch.no_grad():
    model(batch)
    if device == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        model(batch)
    if device == "cuda":
        torch.cuda.synchronize()
print(f"{(time.perf_counter() - start) / n * 1000:.1f} ms / image on {device}")


# In[7]:


probs_np = probs.numpy()
plt.bar(range(5), probs_np[top5.indices.numpy()])
plt.xticks(range(5), [categories[i] for i in top5.indices.tolist()], rotation=45)
plt.tight_layout()
plt.show()
