#!/usr/bin/env python
# coding: utf-8

# # Fine-tuning BERT on IMDB (exported from Jupyter)

# In[1]:


import numpy as np
import torch
from datasets import load_dataset
from torch.utils.data import DataLoader
from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup


# In[2]:


device = torch.device("cuda")  # expect: DEV003
print(torch.cuda.get_device_name(0))  # expect: DEV011


# In[3]:


tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")
raw = load_dataset("imdb")


def tokenize(batch):
    return tokenizer(batch["text"], truncation=True, padding="max_length", max_length=256)


ds = raw.map(tokenize, batched=True)
ds = ds.rename_column("label", "labels")
ds.set_format("torch", columns=["input_ids", "attention_mask", "labels"])
train_dl = DataLoader(ds["train"].shuffle(seed=42).select(range(4000)), batch_size=16, shuffle=True)
eval_dl = DataLoader(ds["test"].shuffle(seed=42).select(range(1000)), batch_size=32)


# In[4]:


model = AutoModelForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2)
model.to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=2e-5)
num_epochs = 2
scheduler = get_linear_schedule_with_warmup(optimizer, 100, num_epochs * len(train_dl))


# In[5]:


model.train()
for epoch in range(num_epochs):
    for step, batch in enumerate(train_dl):
        batch = {k: v.to(device) for k, v in batch.items()}
        outputs = model(**batch)
        loss = outputs.loss
        loss.backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        if step % 50 == 0:
            print(epoch, step, loss.item())


# In[6]:


model.eval()
all_preds, all_labels = [], []
for batch in eval_dl:
    input_ids = batch["input_ids"].to(device)
    attention_mask = batch["attention_mask"].to(device)
    with torch.no_grad():
        outputs = model(input_ids=input_ids, attention_mask=attention_mask)
    preds = outputs.logits.argmax(dim=-1).numpy()  # expect: DEV001
    all_preds.extend(preds)
    all_labels.extend(batch["labels"].numpy())


# In[7]:


acc = (np.array(all_preds) == np.array(all_labels)).mean()
print(f"accuracy: {acc:.3f}")
model.save_pretrained("bert-imdb")
tokenizer.save_pretrained("bert-imdb")
