"""DCGAN on CelebA / LSUN style folders."""
import argparse
import os
import random

import matplotlib.pyplot as plt
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
import torchvision.datasets as dset
import torchvision.transforms as transforms
import torchvision.utils as vutils

parser = argparse.ArgumentParser()
parser.add_argument("--dataroot", required=True)
parser.add_argument("--workers", type=int, default=2)
parser.add_argument("--batchSize", type=int, default=128)
parser.add_argument("--imageSize", type=int, default=64)
parser.add_argument("--nz", type=int, default=100)
parser.add_argument("--ngf", type=int, default=64)
parser.add_argument("--ndf", type=int, default=64)
parser.add_argument("--niter", type=int, default=25)
parser.add_argument("--lr", type=float, default=0.0002)
parser.add_argument("--beta1", type=float, default=0.5)
parser.add_argument("--ngpu", type=int, default=1)
parser.add_argument("--netG", default="", help="path to netG (to continue training)")
parser.add_argument("--outf", default=".")
parser.add_argument("--n_samples", type=int, default=64)
parser.add_argument("--manualSeed", type=int)
args = parser.parse_args()

seed = args.manualSeed if args.manualSeed is not None else random.randint(1, 10000)
random.seed(seed)
torch.manual_seed(seed)

dataset = dset.ImageFolder(
    root=args.dataroot,
    transform=transforms.Compose([
        transforms.Resize(args.imageSize),
        transforms.CenterCrop(args.imageSize),
        transforms.ToTensor(),
        transforms.Normalize((0.5, 0.5, 0.5), (0.5, 0.5, 0.5)),
    ]),
)
dataloader = torch.utils.data.DataLoader(dataset, batch_size=args.batchSize, shuffle=True, num_workers=args.workers)

device = torch.device("cuda:0" if (torch.cuda.is_available() and args.ngpu > 0) else "cpu")  # expect: DEV004
nz, ngf, ndf = args.nz, args.ngf, args.ndf


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find("BatchNorm") != -1:
        nn.init.normal_(m.weight.data, 1.0, 0.02)
        nn.init.constant_(m.bias.data, 0)


class Generator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.ConvTranspose2d(nz, ngf * 8, 4, 1, 0, bias=False), nn.BatchNorm2d(ngf * 8), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 8, ngf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 4), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf * 2), nn.ReLU(True),
            nn.ConvTranspose2d(ngf * 2, ngf, 4, 2, 1, bias=False), nn.BatchNorm2d(ngf), nn.ReLU(True),
            nn.ConvTranspose2d(ngf, 3, 4, 2, 1, bias=False), nn.Tanh(),
        )

    def forward(self, x):
        return self.main(x)


class Discriminator(nn.Module):
    def __init__(self):
        super().__init__()
        self.main = nn.Sequential(
            nn.Conv2d(3, ndf, 4, 2, 1, bias=False), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 2), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 2, ndf * 4, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 4), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 4, ndf * 8, 4, 2, 1, bias=False), nn.BatchNorm2d(ndf * 8), nn.LeakyReLU(0.2, inplace=True),
            nn.Conv2d(ndf * 8, 1, 4, 1, 0, bias=False), nn.Sigmoid(),
        )

    def forward(self, x):
        return self.main(x).view(-1, 1).squeeze(1)


netG = Generator().to(device)
netG.apply(weights_init)
if args.netG != "":
    netG.load_state_dict(torch.load(args.netG))  # expect: DEV007
if device.type == "cuda" and args.ngpu > 1:
    netG = nn.DataParallel(netG, list(range(args.ngpu)))

netD = Discriminator().to(device)
netD.apply(weights_init)

criterion = nn.BCELoss()
fixed_noise = torch.randn(args.batchSize, nz, 1, 1, device=device)
real_label, fake_label = 1.0, 0.0
optimizerD = optim.Adam(netD.parameters(), lr=args.lr, betas=(args.beta1, 0.999))
optimizerG = optim.Adam(netG.parameters(), lr=args.lr, betas=(args.beta1, 0.999))

G_losses, D_losses = [], []
for epoch in range(args.niter):
    for i, data in enumerate(dataloader, 0):
        # (1) Update D: maximize log(D(x)) + log(1 - D(G(z)))
        netD.zero_grad()
        real_cpu = data[0].to(device)
        batch_size = real_cpu.size(0)
        label = torch.full((batch_size,), real_label, dtype=real_cpu.dtype, device=device)
        output = netD(real_cpu)
        errD_real = criterion(output, label)
        errD_real.backward()
        D_x = output.mean().item()

        noise = torch.randn(batch_size, nz, 1, 1, device=device)
        fake = netG(noise)
        label.fill_(fake_label)
        output = netD(fake.detach())
        errD_fake = criterion(output, label)
        errD_fake.backward()
        errD = errD_real + errD_fake
        optimizerD.step()

        # (2) Update G: maximize log(D(G(z)))
        netG.zero_grad()
        label.fill_(real_label)
        output = netD(fake)
        errG = criterion(output, label)
        errG.backward()
        optimizerG.step()

        G_losses.append(errG.item())
        D_losses.append(errD.item())
        if i % 100 == 0:
            print(f"[{epoch}/{args.niter}][{i}/{len(dataloader)}] Loss_D: {errD.item():.4f} "
                  f"Loss_G: {errG.item():.4f} D(x): {D_x:.4f}")
            vutils.save_image(real_cpu, f"{args.outf}/real_samples.png", normalize=True)
            fake = netG(fixed_noise)
            vutils.save_image(fake.detach(), f"{args.outf}/fake_samples_epoch_{epoch:03d}.png", normalize=True)

    torch.save(netG.state_dict(), os.path.join(args.outf, f"netG_epoch_{epoch}.pth"))
    torch.save(netD.state_dict(), os.path.join(args.outf, f"netD_epoch_{epoch}.pth"))

# generate a grid of samples for the README
netG.eval()
with torch.no_grad():
    z = torch.randn(args.n_samples, nz, 1, 1)
    samples = netG(z)  # expect: DEV006
grid = vutils.make_grid(samples, padding=2, normalize=True)
plt.figure(figsize=(8, 8))
plt.axis("off")
plt.imshow(np.transpose(grid.cpu().numpy(), (1, 2, 0)))
plt.savefig(os.path.join(args.outf, "samples.png"))

plt.figure()
plt.plot(G_losses, label="G")
plt.plot(D_losses, label="D")
plt.legend()
plt.savefig(os.path.join(args.outf, "losses.png"))
