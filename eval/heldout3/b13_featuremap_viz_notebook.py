#!/usr/bin/env python
# coding: utf-8

# # Visualising ResNet-18 feature maps and predictions
# 
# Fine-tuned on the flowers dataset (5 classes); this notebook just looks inside it.

# In[1]:


import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn.functional as F
import torchvision
from PIL import Image
from torchvision import transforms

device = "cuda" if torch.cuda.is_available() else "cpu"  # expect: DEV004
print(device)


# In[2]:


classes = ["daisy", "dandelion", "roses", "sunflowers", "tulips"]
model = torchvision.models.resnet18()
model.fc = torch.nn.Linear(model.fc.in_features, len(classes))
state = torch.load("resnet18_flowers.pth", map_location=device)
model.load_state_dict(state)
model.to(device)
model.eval()

preprocess = transforms.Compose([
    transforms.Resize(256),
    transforms.CenterCrop(224),
    transforms.ToTensor(),
    transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
])
mean = np.array([0.485, 0.456, 0.406])
std = np.array([0.229, 0.224, 0.225])


# In[3]:


activations = {}


def save_activation(name):
    def hook(module, inp, out):
        activations[name] = out.detach().cpu()
    return hook


handles = [
    model.layer1.register_forward_hook(save_activation("layer1")),
    model.layer2.register_forward_hook(save_activation("layer2")),
    model.layer4.register_forward_hook(save_activation("layer4")),
]


# In[4]:


img = Image.open("samples/sunflower_01.jpg").convert("RGB")
img_t = preprocess(img).unsqueeze(0).to(device)
with torch.no_grad():
    logits = model(img_t)
probs = F.softmax(logits, dim=1)[0].detach().numpy()  # expect: DEV001
for c, p_ in sorted(zip(classes, probs), key=lambda t: -t[1]):
    print(f"{c:12s} {p_:.3f}")


# In[5]:


fmap = activations["layer1"][0]          # (64, 56, 56), already on the cpu
fig, axes = plt.subplots(4, 8, figsize=(16, 8))
for i, ax in enumerate(axes.flat):
    ax.imshow(fmap[i].numpy(), cmap="viridis")
    ax.axis("off")
plt.suptitle("layer1 feature maps")
plt.show()


# In[6]:


# mean activation per channel of layer4, strongest 16 channels
l4 = activations["layer4"][0]
top = l4.mean(dim=(1, 2)).argsort(descending=True)[:16]
fig, axes = plt.subplots(2, 8, figsize=(16, 4))
for ax, ch in zip(axes.flat, top.tolist()):
    ax.imshow(l4[ch], cmap="magma")
    ax.set_title(str(ch))
    ax.axis("off")
plt.show()


# In[7]:


# a second picture, side by side with its class activation map
img2 = preprocess(Image.open("samples/tulip_07.jpg").convert("RGB")).unsqueeze(0)
with torch.no_grad():
    out2 = model(img2)  # expect: DEV006
pred2 = out2.argmax(1).item()
w = model.fc.weight[pred2].detach().cpu()
cam = torch.einsum("c,chw->hw", w, activations["layer4"][0])
cam = F.interpolate(cam[None, None], size=(224, 224), mode="bilinear")[0, 0]
cam = (cam - cam.min()) / (cam.max() - cam.min() + 1e-8)

shown = img2[0].permute(1, 2, 0).numpy() * std + mean
plt.figure(figsize=(8, 4))
plt.subplot(1, 2, 1)
plt.imshow(np.clip(shown, 0, 1))
plt.title(classes[pred2])
plt.subplot(1, 2, 2)
plt.imshow(np.clip(shown, 0, 1))
plt.imshow(cam.numpy(), alpha=0.5, cmap="jet")
plt.show()


# In[8]:


for h in handles:
    h.remove()
