#!/usr/bin/python3
"""Write the image-loading fixtures that data/image_fixture_test.go reads.

Run from the repository root with the system Python (torch, torchvision,
PIL and numpy from Debian's python3-torch, python3-torchvision, python3-pil):

    /usr/bin/python3 scripts/make_image_fixtures.py

It writes into data/testdata/:

  photo_40x30.png      a 40 wide, 30 high RGB image: smooth gradients, a sharp
                       checkerboard (what aliasing ruins) and noise
  resize_tv_HxW.npy    torchvision.transforms.functional.resize of it to HxW
                       with antialias=True on the float tensor (3×H×W float32,
                       not rounded), for shrinking, enlarging and mixed sizes
  resize_pil_HxW.npy   PIL's Image.resize((W, H), BILINEAR) of it (3×H×W,
                       bytes stored as float32): what torchvision does to a
                       PIL image
  resize_src_5x7.npy,  the 5x7 byte image of data/npy_test.go and torch's
  resize_torch_*.npy   interpolate(antialias=True) of it to 3x4 and 9x11
  exif_6.jpg           a 6 wide, 4 high JPEG whose EXIF Orientation is 6
                       (turn a quarter clockwise to view it)
  exif_6_upright.npy   PIL's ImageOps.exif_transpose of it (3×6×4 bytes as
                       float32): the upright image, 4 wide and 6 high
"""
import io
import os

import numpy as np
import torch
import torch.nn.functional as F
import torchvision.transforms.functional as TF
from PIL import Image, ImageOps

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "testdata")
SIZES = [(16, 16), (7, 13), (29, 40), (45, 50), (30, 40)]


def photo():
    rng = np.random.default_rng(16)
    h, w = 30, 40
    y, x = np.mgrid[0:h, 0:w]
    img = np.zeros((h, w, 3))
    img[..., 0] = 255 * x / (w - 1)
    img[..., 1] = 255 * y / (h - 1)
    img[..., 2] = 255 * ((x // 2 + y // 2) % 2)  # a 2-pixel checkerboard
    img += rng.normal(0, 12, size=img.shape)
    return np.clip(np.round(img), 0, 255).astype(np.uint8)


def save(name, a):
    np.save(os.path.join(OUT, name), np.asarray(a, dtype="<f4"))


def main():
    os.makedirs(OUT, exist_ok=True)
    src = photo()
    Image.fromarray(src, "RGB").save(os.path.join(OUT, "photo_40x30.png"))
    pil = Image.open(os.path.join(OUT, "photo_40x30.png")).convert("RGB")
    t = torch.from_numpy(np.asarray(pil).copy()).permute(2, 0, 1).float()
    for h, w in SIZES:
        save("resize_tv_%dx%d.npy" % (h, w), TF.resize(t, [h, w], antialias=True).numpy())
        r = pil.resize((w, h), Image.BILINEAR)
        save("resize_pil_%dx%d.npy" % (h, w), np.asarray(r).transpose(2, 0, 1))

    rng = np.random.default_rng(7)
    small = rng.integers(0, 256, size=(5, 7)).astype("<f4")
    np.save(os.path.join(OUT, "resize_src_5x7.npy"), small)
    x = torch.from_numpy(small)[None, None]
    for h, w in [(3, 4), (9, 11)]:
        y = F.interpolate(x, size=(h, w), mode="bilinear", align_corners=False, antialias=True)
        save("resize_torch_%dx%d.npy" % (h, w), y[0, 0].numpy())

    # Four coloured quadrants, large enough blocks that JPEG keeps them.
    q = np.zeros((4, 6, 3), dtype=np.uint8)
    q[:2, :3] = (250, 20, 20)
    q[:2, 3:] = (20, 250, 20)
    q[2:, :3] = (20, 20, 250)
    q[2:, 3:] = (240, 240, 240)
    exif = Image.Exif()
    exif[0x0112] = 6
    path = os.path.join(OUT, "exif_6.jpg")
    Image.fromarray(q, "RGB").save(path, quality=100, subsampling=0, exif=exif.tobytes())
    up = ImageOps.exif_transpose(Image.open(path)).convert("RGB")
    save("exif_6_upright.npy", np.asarray(up).transpose(2, 0, 1))
    print("wrote image fixtures to", os.path.normpath(OUT), "with torch", torch.__version__,
          "torchvision", __import__("torchvision").__version__, "PIL", Image.__version__)


if __name__ == "__main__":
    main()
