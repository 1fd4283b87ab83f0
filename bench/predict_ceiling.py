#!/usr/bin/env python3
"""The Python ceiling for predict latency: onnxruntime with ultralytics' own pre- and post-processing, per image.

Usage: predict_ceiling.py ONNX IMAGE... [--iterations 200] [--warmup 10] [--imgsz 640] [--conf 0.25] [--iou 0.7]
                          [--threads 0]

Each iteration takes the next image's bytes (read once, up front) and does what ultralytics' predict does with them,
in ultralytics' own code: cv2.imdecode (utils.patches.imread's decoder), LetterBox (auto for a dynamic export, as
predict's rect=True makes it), the predictor's tensor conversion (BGR → RGB, / 255, NCHW, torch), the onnxruntime
session (CPU, as ultralytics' ONNX backend opens it), non_max_suppression (torchvision NMS, as predict uses it) or the
end2end filter, and scale_boxes. Detect models. Prints one JSON object: {p50_ms, p95_ms, mean_ms, throughput_ips,
iterations, elapsed_s, times_ms, phases_ms, input, detections}; phases_ms: the median milliseconds of each step
(decode, preprocess: letterbox and tensor, inference: the session run, postprocess: NMS and scaling).
"""

import argparse
import ast
import json
import os
import sys
import time

# ultralytics logs to stdout: only the JSON goes there.
STDOUT = os.fdopen(os.dup(1), "w")
os.dup2(2, 1)

import cv2  # noqa: E402
import numpy as np  # noqa: E402
import onnxruntime as ort  # noqa: E402
import torch  # noqa: E402
import torchvision  # noqa: E402, F401 - imported, non_max_suppression uses torchvision.ops.nms as predict does
from ultralytics.data.augment import LetterBox  # noqa: E402
from ultralytics.utils import ops  # noqa: E402
from ultralytics.utils.checks import check_imgsz  # noqa: E402
from ultralytics.utils.nms import non_max_suppression  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("onnx")
    ap.add_argument("images", nargs="+")
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--imgsz", type=int, default=640)
    ap.add_argument("--conf", type=float, default=0.25)
    ap.add_argument("--iou", type=float, default=0.7)
    ap.add_argument("--threads", type=int, default=0, help="onnxruntime intra-op threads; 0: onnxruntime's default")
    a = ap.parse_args()

    options = ort.SessionOptions()
    if a.threads:
        options.intra_op_num_threads = a.threads
    session = ort.InferenceSession(a.onnx, options, providers=["CPUExecutionProvider"])
    meta = session.get_modelmeta().custom_metadata_map
    args = ast.literal_eval(meta.get("args", "{}"))
    stride = int(meta.get("stride", 32))
    dynamic = bool(args.get("dynamic", False))
    end2end = ast.literal_eval(meta.get("end2end", "False")) or bool(args.get("nms"))
    imgsz = check_imgsz(a.imgsz if dynamic else ast.literal_eval(meta["imgsz"]), stride=stride, min_dim=2)
    letterbox = LetterBox(imgsz, auto=dynamic, stride=stride)
    input_name = session.get_inputs()[0].name
    blobs = [np.fromfile(path, np.uint8) for path in a.images]

    phases = {"decode": [], "preprocess": [], "inference": [], "postprocess": []}

    def predict(blob):
        t0 = time.perf_counter()
        im0 = cv2.imdecode(blob, cv2.IMREAD_COLOR)
        t1 = time.perf_counter()
        im = torch.from_numpy(letterbox(image=im0)).unsqueeze(0)
        im = im.permute(0, 3, 1, 2).contiguous().flip(1).float().div_(255)
        t2 = time.perf_counter()
        y = session.run(None, {input_name: im.numpy()})
        t3 = time.perf_counter()
        pred = non_max_suppression(torch.from_numpy(y[0]), a.conf, a.iou, max_det=300, end2end=end2end)[0]
        pred[:, :4] = ops.scale_boxes(im.shape[2:], pred[:, :4], im0.shape)
        t4 = time.perf_counter()
        steps = (("decode", t0, t1), ("preprocess", t1, t2), ("inference", t2, t3), ("postprocess", t3, t4))
        for name, start, end in steps:
            phases[name].append((end - start) * 1000)
        return pred, im.shape[2:]

    for i in range(a.warmup):
        predict(blobs[i % len(blobs)])
    for values in phases.values():
        values.clear()
    times = []
    detections = 0
    started = time.perf_counter()
    for i in range(a.iterations):
        t0 = time.perf_counter()
        pred, shape = predict(blobs[i % len(blobs)])
        times.append((time.perf_counter() - t0) * 1000)
        detections += len(pred)
    total = time.perf_counter() - started
    json.dump(
        {
            "p50_ms": round(float(np.percentile(times, 50)), 3),
            "p95_ms": round(float(np.percentile(times, 95)), 3),
            "mean_ms": round(float(np.mean(times)), 3),
            "throughput_ips": round(a.iterations / total, 3),
            "iterations": a.iterations,
            "elapsed_s": round(total, 4),
            "times_ms": [round(t, 3) for t in times],
            "phases_ms": {name: round(float(np.median(values)), 3) for name, values in phases.items()},
            "input": list(shape),
            "detections": detections,
        },
        STDOUT,
    )
    STDOUT.write("\n")
    STDOUT.flush()


if __name__ == "__main__":
    sys.exit(main())
