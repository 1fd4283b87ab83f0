#!/usr/bin/env python3
"""Draws a small, learnable, seeded YOLO dataset for one task into DIR (the test models of test/helpers/yolo-models.ts).

Usage: make_dataset.py TASK DIR [--size 96] [--train 48] [--val 8] [--seed 7]

Shapes on a plain, slightly noisy background: red squares, blue discs and green triangles, several per picture, with
exact labels for the task (detect: boxes; segment: polygons; pose: a triangle's three corners as keypoints; obb: rotated
rectangles by their corners; classify: one shape per picture, in a folder per class; depth: a depth map in metres). Prints the data argument for
`yolo train` (a data.yaml, or the folder for classify).
"""

import argparse
import math
from pathlib import Path

import cv2
import numpy as np

NAMES = ["square", "disc", "triangle"]
COLORS = [(32, 32, 224), (224, 64, 32), (40, 170, 40)]  # BGR: red, blue, green


def polygon(cls, cx, cy, r, angle):
    """The outline of shape `cls` of radius r centred on (cx, cy), turned by `angle` radians, as float corners."""
    if cls == 1:
        count, start = 24, 0.0
    elif cls == 0:
        count, start = 4, math.pi / 4
    else:
        count, start = 3, -math.pi / 2
    return np.array(
        [(cx + r * math.cos(start + angle + 2 * math.pi * k / count), cy + r * math.sin(start + angle + 2 * math.pi * k / count)) for k in range(count)],
        dtype=np.float64,
    )


def background(rng, size):
    base = rng.integers(150, 230)
    img = np.full((size, size, 3), base, np.uint8)
    noise = rng.integers(-12, 12, (size, size, 3))
    return np.clip(img.astype(np.int16) + noise, 0, 255).astype(np.uint8)


def placements(rng, size, count):
    """Up to `count` (cx, cy, r) circles that do not overlap."""
    out = []
    for _ in range(count * 20):
        if len(out) == count:
            break
        r = rng.uniform(size * 0.08, size * 0.2)
        cx, cy = rng.uniform(r, size - r), rng.uniform(r, size - r)
        if all(math.hypot(cx - x, cy - y) > r + q + 2 for x, y, q in out):
            out.append((cx, cy, r))
    return out


def fmt(values, size):
    return " ".join(f"{min(max(v / size, 0.0), 1.0):.6f}" for v in values)


def picture(rng, task, size):
    img = background(rng, size)
    depth = np.full((size, size), 6.0, np.float32)  # metres: a far wall, shapes in front of it
    lines = []
    shapes = placements(rng, size, int(rng.integers(2, 5)))
    for cx, cy, r in shapes:
        cls = 2 if task == "pose" else int(rng.integers(0, 2)) if task == "obb" else int(rng.integers(0, 3))
        angle = rng.uniform(0, math.pi / 2) if task in {"obb", "segment", "pose"} else 0.0
        if task == "obb":  # rotated rectangles, wide (class 0) or near-square (class 1)
            w, h = (2 * r, r) if cls == 0 else (1.6 * r, 1.4 * r)
            c, s = math.cos(angle), math.sin(angle)
            pts = np.array([(cx + dx * c - dy * s, cy + dx * s + dy * c) for dx, dy in [(-w / 2, -h / 2), (w / 2, -h / 2), (w / 2, h / 2), (-w / 2, h / 2)]])
        else:
            pts = polygon(cls, cx, cy, r, angle)
        cv2.fillPoly(img, [np.round(pts * 16).astype(np.int32)], COLORS[cls], lineType=cv2.LINE_AA, shift=4)
        cv2.fillPoly(depth, [np.round(pts).astype(np.int32)], 1.0 + cls)
        x1, y1 = pts.min(0)
        x2, y2 = pts.max(0)
        box = fmt([(x1 + x2) / 2, (y1 + y2) / 2], size) + " " + fmt([x2 - x1, y2 - y1], size)
        if task == "detect":
            lines.append(f"{cls} {box}")
        elif task == "segment":
            lines.append(f"{cls} {fmt(pts.reshape(-1), size)}")
        elif task == "obb":
            lines.append(f"{cls} {fmt(pts.reshape(-1), size)}")
        elif task == "pose":
            kpts = " ".join(f"{fmt(p, size)} 2" for p in pts)
            lines.append(f"0 {box} {kpts}")
    return img, depth if task == "depth" else "\n".join(lines) + "\n"


def classify_picture(rng, size, cls):
    img = background(rng, size)
    r = rng.uniform(size * 0.2, size * 0.35)
    cx, cy = rng.uniform(r, size - r), rng.uniform(r, size - r)
    pts = polygon(cls, cx, cy, r, rng.uniform(0, 0.3))
    cv2.fillPoly(img, [np.round(pts * 16).astype(np.int32)], COLORS[int(rng.integers(0, 3))], lineType=cv2.LINE_AA, shift=4)
    return img


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("task", choices=["detect", "segment", "pose", "obb", "classify", "depth"])
    ap.add_argument("dir")
    ap.add_argument("--size", type=int, default=96)
    ap.add_argument("--train", type=int, default=48)
    ap.add_argument("--val", type=int, default=8)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    rng = np.random.default_rng(a.seed)
    root = Path(a.dir)
    for split, count in (("train", a.train), ("val", a.val)):
        for i in range(count):
            if a.task == "classify":
                cls = i % len(NAMES)
                path = root / split / NAMES[cls] / f"{i}.png"
                path.parent.mkdir(parents=True, exist_ok=True)
                cv2.imwrite(str(path), classify_picture(rng, a.size, cls))
                continue
            img, label = picture(rng, a.task, a.size)
            (root / "images" / split).mkdir(parents=True, exist_ok=True)
            cv2.imwrite(str(root / "images" / split / f"{i}.png"), img)
            if a.task == "depth":  # a depth map per image, in metres, beside images/ (DepthDataset's layout)
                (root / "depth" / split).mkdir(parents=True, exist_ok=True)
                np.save(root / "depth" / split / f"{i}.npy", label)
                continue
            (root / "labels" / split).mkdir(parents=True, exist_ok=True)
            (root / "labels" / split / f"{i}.txt").write_text(label)
    if a.task == "classify":
        print(root.resolve())
        return
    names = ["wide", "squarish"] if a.task == "obb" else ["triangle"] if a.task == "pose" else ["depth"] if a.task == "depth" else NAMES
    yaml = f"path: {root.resolve()}\ntrain: images/train\nval: images/val\nnames:\n" + "".join(f"  {i}: {n}\n" for i, n in enumerate(names))
    if a.task == "pose":
        yaml += "kpt_shape: [3, 3]\nflip_idx: [0, 2, 1]\n"
    (root / "data.yaml").write_text(yaml)
    print((root / "data.yaml").resolve())


if __name__ == "__main__":
    main()
