"""Neural style transfer (Gatys et al.) with VGG-19, following the classic PyTorch tutorial.

    python c10_neural_style_transfer.py content.jpg style.jpg stylized.jpg
"""
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
import torchvision.transforms as transforms
from PIL import Image
from torchvision.models import VGG19_Weights, vgg19

device = torch.accelerator.current_accelerator() if torch.accelerator.is_available() else torch.device("cpu")

# use a small size when running on the CPU
imsize = 512 if device.type != "cpu" else 128
loader = transforms.Compose([transforms.Resize((imsize, imsize)), transforms.ToTensor()])


def image_loader(image_name):
    image = Image.open(image_name).convert("RGB")
    image = loader(image).unsqueeze(0)
    return image.to(device, torch.float)


class ContentLoss(nn.Module):
    def __init__(self, target):
        super().__init__()
        # a fixed target, not a variable we optimise
        self.target = target.detach()

    def forward(self, input):
        self.loss = F.mse_loss(input, self.target)
        return input


def gram_matrix(input):
    a, b, c, d = input.size()
    features = input.view(a * b, c * d)
    G = torch.mm(features, features.t())
    return G.div(a * b * c * d)


class StyleLoss(nn.Module):
    def __init__(self, target_feature):
        super().__init__()
        self.target = gram_matrix(target_feature).detach()

    def forward(self, input):
        self.loss = F.mse_loss(gram_matrix(input), self.target)
        return input


class Normalization(nn.Module):
    def __init__(self, mean, std):
        super().__init__()
        # view as [C x 1 x 1] so they broadcast over [B x C x H x W]
        self.mean = torch.tensor(mean).view(-1, 1, 1)  # expect: DEV014
        self.std = torch.tensor(std).view(-1, 1, 1)  # expect: DEV014

    def forward(self, img):
        return (img - self.mean) / self.std


content_layers_default = ["conv_4"]
style_layers_default = ["conv_1", "conv_2", "conv_3", "conv_4", "conv_5"]


def get_style_model_and_losses(cnn, mean, std, style_img, content_img,
                               content_layers=content_layers_default, style_layers=style_layers_default):
    normalization = Normalization(mean, std)
    content_losses, style_losses = [], []
    model = nn.Sequential(normalization)

    i = 0
    for layer in cnn.children():
        if isinstance(layer, nn.Conv2d):
            i += 1
            name = f"conv_{i}"
        elif isinstance(layer, nn.ReLU):
            name = f"relu_{i}"
            layer = nn.ReLU(inplace=False)
        elif isinstance(layer, nn.MaxPool2d):
            name = f"pool_{i}"
        elif isinstance(layer, nn.BatchNorm2d):
            name = f"bn_{i}"
        else:
            raise RuntimeError(f"Unrecognized layer: {layer.__class__.__name__}")
        model.add_module(name, layer)

        if name in content_layers:
            target = model(content_img).detach()
            content_loss = ContentLoss(target)
            model.add_module(f"content_loss_{i}", content_loss)
            content_losses.append(content_loss)
        if name in style_layers:
            target_feature = model(style_img).detach()
            style_loss = StyleLoss(target_feature)
            model.add_module(f"style_loss_{i}", style_loss)
            style_losses.append(style_loss)

    # drop the layers after the last loss
    for i in range(len(model) - 1, -1, -1):
        if isinstance(model[i], (ContentLoss, StyleLoss)):
            break
    model = model[: i + 1]
    return model, style_losses, content_losses


def run_style_transfer(cnn, mean, std, content_img, style_img, input_img,
                       num_steps=300, style_weight=1_000_000, content_weight=1):
    model, style_losses, content_losses = get_style_model_and_losses(cnn, mean, std, style_img, content_img)
    input_img.requires_grad_(True)
    model.eval()
    model.requires_grad_(False)
    optimizer = optim.LBFGS([input_img])

    run = [0]
    while run[0] <= num_steps:

        def closure():
            with torch.no_grad():
                input_img.clamp_(0, 1)
            optimizer.zero_grad()
            model(input_img)
            style_score = style_weight * sum(sl.loss for sl in style_losses)
            content_score = content_weight * sum(cl.loss for cl in content_losses)
            loss = style_score + content_score
            loss.backward()
            run[0] += 1
            if run[0] % 50 == 0:
                print(f"run {run[0]}: style {style_score.item():.4f} content {content_score.item():.4f}")
            return style_score + content_score

        optimizer.step(closure)

    with torch.no_grad():
        input_img.clamp_(0, 1)
    return input_img


if __name__ == "__main__":
    content_path, style_path, out_path = sys.argv[1:4]
    style_img = image_loader(style_path)
    content_img = image_loader(content_path)
    assert style_img.size() == content_img.size(), "style and content images must be the same size"

    cnn = vgg19(weights=VGG19_Weights.DEFAULT).features.eval().to(device)
    cnn_normalization_mean = [0.485, 0.456, 0.406]
    cnn_normalization_std = [0.229, 0.224, 0.225]

    input_img = content_img.clone()
    output = run_style_transfer(cnn, cnn_normalization_mean, cnn_normalization_std,
                                content_img, style_img, input_img)

    out = output.detach().cpu().squeeze(0)
    transforms.ToPILImage()(out).save(out_path)
    print("saved", out_path)
