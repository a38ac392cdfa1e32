#!/usr/bin/python3
"""Write a small image folder of three classes a small CNN learns in a few
steps: 40 noisy 16×16 RGB images each of horizontal stripes, vertical
stripes and a coloured square (fixed seed; PIL and numpy from Debian).

    /usr/bin/python3 scripts/pattern_images.py DIR

docs/onnx.md fine-tunes the Resize fixture on it with `cotrain finetune
--train-last all`, as a user would, on the CPU and on PoCL.
"""
import os
import sys

import numpy as np
from PIL import Image


def main(out):
    r = np.random.default_rng(5)
    for c, name in enumerate(["stripes_h", "stripes_v", "blobs"]):
        os.makedirs(os.path.join(out, name), exist_ok=True)
        for i in range(40):
            a = r.integers(0, 60, (16, 16, 3))
            if c == 0:
                a[::4, :, :] += 180
            elif c == 1:
                a[:, ::4, :] += 180
            else:
                a[4:12, 4:12, r.integers(0, 3)] += 180
            Image.fromarray(np.clip(a, 0, 255).astype(np.uint8)).save(os.path.join(out, name, f"{i}.png"))


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: pattern_images.py DIR")
    main(sys.argv[1])
