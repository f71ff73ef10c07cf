# source: https://github.com/lucidrains/x-transformers/blob/9252ed7838021ee61e6c5be0930b3a9a88efdf06/train_xl_enwik8.py
# /// script
# dependencies = [
#   "tqdm",
#   "x-transformers",
#   "wandb",
#   "fire",
#   "accelerate"
# ]
# ///

from x_transformers import TransformerWrapper, Decoder
from x_transformers.xl_autoregressive_wrapper import XLAutoregressiveWrapper

import random
import tqdm
import gzip
import numpy as np
import torch
from torch.optim import Adam
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset
import fire
import wandb
from accelerate import Accelerator

# helpers

def exists(v):
    return v is not None

def default(val, d):
    return val if exists(val) else d

def divisible_by(num, den):
    return (num % den) == 0

def cycle(loader):
    while True:
        for data in loader:
            yield data

def decode_token(token):
    return str(chr(max(32, token)))

def decode_tokens(tokens):
    return ''.join(list(map(decode_token, tokens)))

def train(
    num_batches = int(1e5),
    batch_size = 4,
    gradient_accumulate_every = 4,
    learning_rate = 1e-4,
    validate_every = 100,
    generate_every = 500,
    generate_length = None,
    seq_len = 512,
    train_seq_len = 2048,
    e2e_ttt = False,
    ttt_custom_loss = False,
    ttt_lr = 1e-3,
    ttt_wd = 0.0,
    tbptt_steps = 2,
    track_experiment_online = False,
    run_name = 'xl-baseline',
    cpu = False
):
    generate_length = default(generate_length, train_seq_len)
    accelerator = Accelerator(cpu = cpu)
    device = accelerator.device

    # instantiate GPT-like decoder model

    model = TransformerWrapper(
        num_tokens = 256,
        max_seq_len = seq_len,
        max_mem_len = seq_len,
        shift_mem_down = 1,
        attn_layers = Decoder(
            dim = 512,
            depth = 6,
            heads = 8,
            rotary_pos_emb = True,
            pre_and_post_norm = True
        )
    )

    ttt_module_paths = tuple()
    custom_loss = None
    if e2e_ttt:
        # target the value projection of the last few layers, or just the last layer
        ttt_module_paths = ('attn_layers.layers.10.1.to_v',)

        if ttt_custom_loss:
            from x_transformers.xl_autoregressive_wrapper import TTTMetaLearningTargetKLLoss
            custom_loss = TTTMetaLearningTargetKLLoss(dim = 512, num_classes = 256)

    model = XLAutoregressiveWrapper(
        model,
        tbptt_steps = tbptt_steps,
        ttt_module_paths = ttt_module_paths,
        ttt_lr = ttt_lr,
        ttt_wd = ttt_wd,
        ttt_custom_loss_module = custom_loss
    )

    optim = Adam(model.parameters(), lr=learning_rate)

    # prepare enwik8 data

    with gzip.open('./data/enwik8.gz') as file:
        data = np.frombuffer(file.read(int(95e6)), dtype=np.uint8).copy()
        train_x, valid_x = np.split(data, [int(90e6)])
        data_train, data_val = torch.from_numpy(train_x), torch.from_numpy(valid_x)

    class TextSamplerDataset(Dataset):
        def __init__(self, data, seq_len):
            super().__init__()
            self.data = data
            self.seq_len = seq_len

        def __getitem__(self, index):
            rand_start = torch.randint(0, self.data.size(0) - self.seq_len - 1, (1,))
            full_seq = self.data[rand_start: rand_start + self.seq_len + 1].long()
            return full_seq.to(device)

        def __len__(self):
            return self.data.size(0) // self.seq_len

    train_dataset = TextSamplerDataset(data_train, train_seq_len)
    val_dataset   = TextSamplerDataset(data_val, train_seq_len)

    train_loader  = cycle(DataLoader(train_dataset, batch_size = batch_size, drop_last = True))
    val_loader    = cycle(DataLoader(val_dataset, batch_size = batch_size, drop_last = True))

    # optimizer initialized above

    # experiment

    wandb.init(project = 'enwik8', mode = 'online' if track_experiment_online else 'disabled')
    wandb.run.name = run_name

    model, optim, train_loader, val_loader = accelerator.prepare(
        model, optim, train_loader, val_loader
    )

    # training

    for i in tqdm.tqdm(range(num_batches), mininterval=10., desc='training'):
        model.train()

        for _ in range(gradient_accumulate_every):
            loss = model(next(train_loader))
            accelerator.backward(loss / gradient_accumulate_every)

        print(f'training loss: {loss.item()}')  # expect: DEV012

        if accelerator.is_main_process:
            wandb.log(dict(loss = loss.item()))  # expect: DEV012

        accelerator.clip_grad_norm_(model.parameters(), 0.5)
        optim.step()
        optim.zero_grad()

        if divisible_by(i, validate_every):
            model.eval()
            with torch.no_grad():
                loss = model(next(val_loader))
                print(f'validation loss: {loss.item()}')

                if accelerator.is_main_process:
                    wandb.log(dict(valid_loss = loss.item()))

        if divisible_by(i, generate_every):
            model.eval()
            inp = random.choice(val_dataset)[:seq_len]
            prime = decode_tokens(inp.cpu().numpy())
            print(f'{prime} \n\n {"*" * 100}')

            sample = model.generate(
                start_tokens = inp[None, ...],
                seq_len = generate_length
            )

            print(decode_tokens(sample[0].cpu().numpy()))

if __name__ == '__main__':
    fire.Fire(train)
