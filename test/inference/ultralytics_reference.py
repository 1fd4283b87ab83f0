#!/usr/bin/env python3
"""What ultralytics itself does with an ONNX export, as JSON on stdout: the reference the @vp/inference tests compare to.

Usage:
  ultralytics_reference.py predict ONNX TASK --runs '[{"imgsz": 96, "conf": 0.01, "iou": 0.7, "max_det": 300}]' IMAGE...
      Per run, one object per image: shape, boxes (xyxy, or the 4 corners for obb), conf, cls, polygons (segment:
      masks.xy), keypoints (pose), probs (classify), semantic (the class map, base64 uint8), depth (base64 float32), and summaries: Results.summary() for normalize False/True and
      decimals 5/2.
  ultralytics_reference.py preprocess ONNX TASK --imgsz N IMAGE...
      The predictor's preprocessed input tensor per image: {shape, data (base64 float32, NCHW)}.
"""

import argparse
import base64
import json
import sys

import os

# ultralytics logs to stdout: send fd 1 to stderr so that only the JSON goes to the real stdout.
STDOUT = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)

import numpy as np  # noqa: E402
from ultralytics import YOLO  # noqa: E402


def rows(result):
    out = {"shape": list(result.orig_shape)}
    if result.probs is not None:
        out["probs"] = result.probs.data.tolist()
    elif result.depth is not None:
        out["depth"] = base64.b64encode(result.depth.data.cpu().numpy().astype(np.float32).tobytes()).decode()
    elif result.semantic_mask is not None:
        out["semantic"] = base64.b64encode(result.semantic_mask.data.cpu().numpy().astype(np.uint8).tobytes()).decode()
    elif result.obb is not None:
        out["boxes"] = result.obb.xyxyxyxy.reshape(-1, 8).tolist()
        out["conf"] = result.obb.conf.tolist()
        out["cls"] = [int(c) for c in result.obb.cls.tolist()]
    else:
        out["boxes"] = result.boxes.xyxy.tolist()
        out["conf"] = result.boxes.conf.tolist()
        out["cls"] = [int(c) for c in result.boxes.cls.tolist()]
    if result.masks is not None:
        out["polygons"] = [p.reshape(-1).tolist() for p in result.masks.xy]
    if result.keypoints is not None:
        out["keypoints"] = result.keypoints.data.tolist()
    out["summaries"] = {
        f"{normalize}-{decimals}": result.summary(normalize=normalize, decimals=decimals)
        for normalize in (False, True)
        for decimals in (5, 2)
    }
    return out


def predict(model, image, args):
    """rows() of one prediction, or {"error": ...} where ultralytics itself fails (e.g. an end2end export whose TopK
    needs more anchors than a small rectangular input has)."""
    try:
        return rows(model.predict(image, **args)[0])
    except Exception as e:  # noqa: BLE001 - reported to the test, which decides
        return {"error": str(e).splitlines()[0][:300]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("command", choices=["predict", "preprocess"])
    ap.add_argument("onnx")
    ap.add_argument("task")
    ap.add_argument("images", nargs="+")
    ap.add_argument("--runs", default='[{"imgsz": 640}]', help="JSON list of predict arguments")
    ap.add_argument("--imgsz", type=int, default=640, help="preprocess: the size")
    a = ap.parse_args()
    model = YOLO(a.onnx, task=a.task)
    out = []
    if a.command == "predict":
        for run in json.loads(a.runs):
            args = dict(verbose=False, device="cpu", **run)
            out.append([predict(model, image, args) for image in a.images])
    else:
        args = dict(imgsz=a.imgsz, verbose=False, device="cpu")
        from ultralytics.utils.patches import imread

        model.predict(a.images[0], **args)  # sets the predictor up as predict does
        predictor = model.predictor
        for image in a.images:
            predictor.setup_source(image)
            tensor = predictor.preprocess([imread(image)]).cpu().numpy().astype(np.float32)
            out.append({"shape": list(tensor.shape), "data": base64.b64encode(tensor.tobytes()).decode()})
    json.dump(out, STDOUT)
    STDOUT.flush()


if __name__ == "__main__":
    main()
