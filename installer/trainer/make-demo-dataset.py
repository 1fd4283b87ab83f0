#!/usr/bin/env python3
"""Tiny learnable YOLO detect dataset for trainer smoke tests: 64 train / 16 val 160x160 images of
coloured rectangles (class 0) and circles (class 1), non-overlapping, exact YOLO boxes.
Usage: make-demo-dataset.py OUT_DIR [--path-in-yaml P]  (P: the dataset root as the trainer sees it)
"""
import argparse
import random
from pathlib import Path
from PIL import Image, ImageDraw

ap = argparse.ArgumentParser()
ap.add_argument("out")
ap.add_argument("--path-in-yaml", help="dataset root as the trainer sees it, e.g. /data in a container")
args = ap.parse_args()
root = Path(args.out).resolve()
ntrain, nval, S = 64, 16, 160
rng = random.Random(0)
for split, n in (("train", ntrain), ("val", nval)):
    (root / "images" / split).mkdir(parents=True, exist_ok=True)
    (root / "labels" / split).mkdir(parents=True, exist_ok=True)
    for i in range(n):
        bg = tuple(rng.randint(0, 60) for _ in range(3))
        im = Image.new("RGB", (S, S), bg)
        d = ImageDraw.Draw(im)
        lines, boxes = [], []
        for _ in range(rng.randint(1, 3)):
            cls = rng.randint(0, 1)
            w, h = rng.randint(24, 64), rng.randint(24, 64)
            if cls == 1:
                h = w
            for _try in range(50):  # no overlaps, so every box stays exact
                x0, y0 = rng.randint(0, S - w - 1), rng.randint(0, S - h - 1)
                if all(x0 >= bx1 or bx0 >= x0 + w or y0 >= by1 or by0 >= y0 + h for bx0, by0, bx1, by1 in boxes):
                    break
            else:
                continue
            boxes.append((x0, y0, x0 + w, y0 + h))
            col = (rng.randint(150, 255), rng.randint(0, 120), rng.randint(0, 255)) if cls == 0 else (rng.randint(0, 120), rng.randint(150, 255), rng.randint(0, 255))
            (d.rectangle if cls == 0 else d.ellipse)([x0, y0, x0 + w - 1, y0 + h - 1], fill=col)
            lines.append(f"{cls} {(x0 + w / 2) / S:.6f} {(y0 + h / 2) / S:.6f} {w / S:.6f} {h / S:.6f}")
        im.save(root / "images" / split / f"{i:04d}.jpg", quality=95)
        (root / "labels" / split / f"{i:04d}.txt").write_text("\n".join(lines) + "\n")
(root / "data.yaml").write_text(f"path: {args.path_in_yaml or root}\ntrain: images/train\nval: images/val\nnames:\n  0: rectangle\n  1: circle\n")
print(f"dataset written to {root}")
