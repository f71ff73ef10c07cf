"""BERT fine-tuning for CoLA (sentence acceptability), tutorial-derived trainer class."""
import datetime
import random
import time

import numpy as np
import pandas as pd
import torch
from sklearn.metrics import matthews_corrcoef
from torch.cuda.amp import GradScaler, autocast
from torch.utils.data import DataLoader, RandomSampler, SequentialSampler, TensorDataset, random_split
from transformers import BertForSequenceClassification, BertTokenizer, get_linear_schedule_with_warmup

if torch.cuda.is_available():  # expect: DEV004
    device = torch.device("cuda")
    print("There are %d GPU(s) available." % torch.cuda.device_count())
    print("We will use the GPU:", torch.cuda.get_device_name(0))
else:
    print("No GPU available, using the CPU instead.")
    device = torch.device("cpu")


def flat_accuracy(preds, labels):
    pred_flat = np.argmax(preds, axis=1).flatten()
    return np.sum(pred_flat == labels.flatten()) / len(labels.flatten())


def format_time(elapsed):
    return str(datetime.timedelta(seconds=int(round(elapsed))))


class ColaTrainer:
    def __init__(self, model, train_dataloader, validation_dataloader, epochs=4, lr=2e-5):
        self.model = model
        self.model.to(device)
        self.train_dataloader = train_dataloader
        self.validation_dataloader = validation_dataloader
        self.epochs = epochs
        self.optimizer = torch.optim.AdamW(model.parameters(), lr=lr, eps=1e-8)
        total_steps = len(train_dataloader) * epochs
        self.scheduler = get_linear_schedule_with_warmup(self.optimizer, num_warmup_steps=0,
                                                         num_training_steps=total_steps)
        self.scaler = GradScaler()  # expect: DEV009
        self.stats = []

    def train_epoch(self):
        t0 = time.time()
        total_train_loss = 0
        self.model.train()
        for step, batch in enumerate(self.train_dataloader):
            if step % 40 == 0 and step != 0:
                print("  Batch {:>5,}  of  {:>5,}.    Elapsed: {:}.".format(
                    step, len(self.train_dataloader), format_time(time.time() - t0)))
            batch = tuple(t.to(device) for t in batch)
            b_input_ids, b_input_mask, b_labels = batch
            self.model.zero_grad()
            with autocast():  # expect: DEV009
                result = self.model(b_input_ids, token_type_ids=None, attention_mask=b_input_mask,
                                    labels=b_labels, return_dict=True)
            loss = result.loss
            total_train_loss += loss.item()
            self.scaler.scale(loss).backward()
            self.scaler.unscale_(self.optimizer)
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
            self.scaler.step(self.optimizer)
            self.scaler.update()
            self.scheduler.step()
        return total_train_loss / len(self.train_dataloader), format_time(time.time() - t0)

    def evaluate(self):
        self.model.eval()
        total_eval_accuracy, total_eval_loss = 0, 0
        all_preds, all_labels = [], []
        loss_fct = torch.nn.CrossEntropyLoss()
        for batch in self.validation_dataloader:
            b_input_ids = batch[0].to(device)
            b_input_mask = batch[1].to(device)
            b_labels = batch[2]
            with torch.no_grad():
                logits = self.model(b_input_ids, token_type_ids=None, attention_mask=b_input_mask).logits
            loss = loss_fct(logits, b_labels)  # expect: DEV002
            total_eval_loss += loss.item()
            logits = logits.detach().cpu().numpy()
            label_ids = b_labels.to("cpu").numpy()
            total_eval_accuracy += flat_accuracy(logits, label_ids)
            all_preds.extend(np.argmax(logits, axis=1))
            all_labels.extend(label_ids)
        n = len(self.validation_dataloader)
        return total_eval_loss / n, total_eval_accuracy / n, matthews_corrcoef(all_labels, all_preds)

    def train(self):
        total_t0 = time.time()
        for epoch_i in range(self.epochs):
            print("======== Epoch {:} / {:} ========".format(epoch_i + 1, self.epochs))
            avg_train_loss, training_time = self.train_epoch()
            avg_val_loss, avg_val_accuracy, mcc = self.evaluate()
            print("  Validation Accuracy: {0:.2f}  MCC: {1:.3f}".format(avg_val_accuracy, mcc))
            self.stats.append({"epoch": epoch_i + 1, "Training Loss": avg_train_loss, "Valid. Loss": avg_val_loss,
                               "Valid. Accur.": avg_val_accuracy, "Training Time": training_time})
        print("Total training took {:} (h:mm:ss)".format(format_time(time.time() - total_t0)))
        return pd.DataFrame(self.stats).set_index("epoch")


if __name__ == "__main__":
    seed_val = 42
    random.seed(seed_val)
    np.random.seed(seed_val)
    torch.manual_seed(seed_val)
    torch.cuda.manual_seed_all(seed_val)

    df = pd.read_csv("./cola_public/raw/in_domain_train.tsv", delimiter="\t", header=None,
                     names=["sentence_source", "label", "label_notes", "sentence"])
    tokenizer = BertTokenizer.from_pretrained("bert-base-uncased", do_lower_case=True)
    enc = tokenizer(df.sentence.tolist(), padding="max_length", truncation=True, max_length=64,
                    return_attention_mask=True, return_tensors="pt")
    dataset = TensorDataset(enc["input_ids"], enc["attention_mask"], torch.tensor(df.label.values))
    train_size = int(0.9 * len(dataset))
    train_dataset, val_dataset = random_split(dataset, [train_size, len(dataset) - train_size])
    train_dataloader = DataLoader(train_dataset, sampler=RandomSampler(train_dataset), batch_size=32)
    validation_dataloader = DataLoader(val_dataset, sampler=SequentialSampler(val_dataset), batch_size=32)

    model = BertForSequenceClassification.from_pretrained("bert-base-uncased", num_labels=2,
                                                          output_attentions=False, output_hidden_states=False)
    trainer = ColaTrainer(model, train_dataloader, validation_dataloader)
    print(trainer.train())
    model.save_pretrained("./model_save/")
    tokenizer.save_pretrained("./model_save/")
