"""DCGAN on CelebA / any ImageFolder dataset.

    python b02_dcgan_celeba.py --dataroot data/celeba --epochs 20 --amp
"""
import argparse
import os
import random

import torch
import torch.nn as nn
import torch.optim as optim
import torchvision.datasets as dset
import torchvision.transforms as transforms
import torchvision.utils as vutils
from torch.utils.data import DataLoader


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight.data, 1.0, 0.02)
        nn.init.constant_(m.bias.data, 0)


class Generator(nn.Module):
    def __init__(self, nz=100, ngf=64, nc=3):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 8), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf), nn.ReLU(True),
            nn.ConvTranspose2d(ngf, nc, 4, 2, 1, bias=False),
            nn.Tanh(),
        )

    def forward(self, z):
        return self.main(z)


class Discriminator(nn.Module):
    def __init__(self, ndf=64, nc=3):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 4), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 8), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False),
        )

    def forward(self, x):
        return self.main(x).view(-1)


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--dataroot", required=True)
    p.add_argument("--workers", type=int, default=4)
    p.add_argument("--batch-size", type=int, default=128)
    p.add_argument("--image-size", type=int, default=64)
    p.add_argument("--nz", type=int, default=100)
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--lr", type=float, default=2e-4)
    p.add_argument("--beta1", type=float, default=0.5)
    p.add_argument("--amp", action="store_true")
    p.add_argument("--resume", default="")
    p.add_argument("--outdir", default="out_dcgan")
    p.add_argument("--log-every", type=int, default=50)
    p.add_argument("--seed", type=int, default=999)
    return p.parse_args()


def main():
    args = parse_args()
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    os.makedirs(args.outdir, exist_ok=True)

    device = torch.device(
        "cuda" if torch.cuda.is_available()
        else "mps" if torch.backends.mps.is_available()
        else "cpu"
    )
    use_amp = args.amp and device.type == "cuda"
    print(f"device={device} amp={use_amp}")

    dataset = dset.ImageFolder(
        root=args.dataroot,
        transform=transforms.Compose([
            transforms.Resize(args.image_size),
            transforms.CenterCrop(args.image_size),
            transforms.ToTensor(),
            transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),
        ]),
    )
    loader = DataLoader(dataset, batch_size=args.batch_size, shuffle=True,
                        num_workers=args.workers, pin_memory=(device.type == "cuda"),
                        drop_last=True)

    netG = Generator(args.nz).to(device)
    netG.apply(weights_init)
    netD = Discriminator().to(device)
    netD.apply(weights_init)

    optD = optim.Adam(netD.parameters(), lr=args.lr, betas=(args.beta1, 0.999))
    optG = optim.Adam(netG.parameters(), lr=args.lr, betas=(args.beta1, 0.999))

    start_epoch = 0
    if args.resume:
        ckpt = torch.load(args.resume, map_location=device)
        netG.load_state_dict(ckpt["netG"])
        netD.load_state_dict(ckpt["netD"])
        optG.load_state_dict(ckpt["optG"])
        optD.load_state_dict(ckpt["optD"])
        start_epoch = ckpt["epoch"] + 1

    criterion = nn.BCEWithLogitsLoss()
    # same noise every epoch so the grids are comparable
    fixed_noise = torch.randn(64, args.nz, 1, 1)

    scaler_d = torch.cuda.amp.GradScaler(enabled=use_amp)  # expect: DEV009
    scaler_g = torch.amp.GradScaler("cuda", enabled=use_amp)

    for epoch in range(start_epoch, args.epochs):
        for i, (real, _) in enumerate(loader):
            real = real.to(device, non_blocking=True)
            b = real.size(0)
            real_lbl = torch.full((b,), 1.0, device=device)
            fake_lbl = torch.zeros(b, device=device)
            noise = torch.randn(b, args.nz, 1, 1, device=device)

            # (1) update D: maximize log(D(x)) + log(1 - D(G(z)))
            optD.zero_grad(set_to_none=True)
            with torch.cuda.amp.autocast(enabled=use_amp):  # expect: DEV009
                fake = netG(noise)
                errD_real = criterion(netD(real), real_lbl)
                errD_fake = criterion(netD(fake.detach()), fake_lbl)
                errD = errD_real + errD_fake
            scaler_d.scale(errD).backward()
            scaler_d.step(optD)
            scaler_d.update()

            # (2) update G: maximize log(D(G(z)))
            optG.zero_grad(set_to_none=True)
            with torch.amp.autocast("cuda", enabled=use_amp):
                errG = criterion(netD(fake), real_lbl)
            scaler_g.scale(errG).backward()
            scaler_g.step(optG)
            scaler_g.update()

            if i % args.log_every == 0:
                print(f"[{epoch}/{args.epochs}][{i}/{len(loader)}] "
                      f"Loss_D {errD.item():.4f} Loss_G {errG.item():.4f}")

        netG.eval()
        with torch.no_grad():
            samples = netG(fixed_noise).detach().cpu()  # expect: DEV006
        netG.train()
        vutils.save_image(samples, os.path.join(args.outdir, f"epoch_{epoch:03d}.png"),
                          normalize=True, nrow=8)
        torch.save({"netG": netG.state_dict(), "netD": netD.state_dict(),
                    "optG": optG.state_dict(), "optD": optD.state_dict(),
                    "epoch": epoch}, os.path.join(args.outdir, "last.pt"))


if __name__ == "__main__":
    main()
