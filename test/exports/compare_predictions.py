#!/usr/bin/env python3
"""Check that an exported YOLO detection artifact predicts what its .pt model predicts on one image.

Usage: compare_predictions.py PT ARTIFACT IMAGE [--imgsz N] [--conf C] [--iou-min 0.9] [--conf-tol 0.02]

Both models predict on IMAGE on CPU, at the artifact's input size. Every box one model predicts at conf >= --conf must
have a box from the other model of the same class with IoU >= --iou-min and a confidence within --conf-tol (matched one
to one, in both directions). The counterpart is looked for down to conf - conf_tol, so a box just above the threshold
whose counterpart is just below it still matches, and nothing else is forgiven.
Prints one JSON object {"ok": bool, "details": {...}} and exits 0 when ok, 1 on mismatch, 2 when a model fails to load
or predict.
"""

import argparse
import json
import os
import sys


def boxes_of(result):
    b = result.boxes
    return [
        {"cls": int(c), "conf": float(p), "xyxy": [float(v) for v in xyxy]}
        for c, p, xyxy in zip(b.cls.tolist(), b.conf.tolist(), b.xyxy.tolist())
    ]


def iou(a, b):
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def match(boxes, others, conf, iou_min, conf_tol):
    """Pairs each box at conf >= `conf` (most confident first) with an unused same-class box of `others` with IoU >=
    iou_min and confidence within conf_tol (best IoU, then closest confidence); returns (problems, pairs)."""
    problems, pairs, free = [], [], list(range(len(others)))
    for box in sorted((b for b in boxes if b["conf"] >= conf), key=lambda b: -b["conf"]):
        fits = [
            (iou(box["xyxy"], others[j]["xyxy"]), -abs(others[j]["conf"] - box["conf"]), j)
            for j in free
            if others[j]["cls"] == box["cls"] and abs(others[j]["conf"] - box["conf"]) <= conf_tol
        ]
        best_iou, _, best = max(fits, default=(0.0, 0.0, None))
        if best is not None and best_iou >= iou_min:
            free.remove(best)
            pairs.append({"iou": round(best_iou, 4), "dconf": round(others[best]["conf"] - box["conf"], 4)})
        else:
            problems.append({"unmatched": box, "best_iou_within_conf_tol": round(best_iou, 4)})
    return problems, pairs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pt")
    ap.add_argument("artifact")
    ap.add_argument("image")
    ap.add_argument("--imgsz", type=int, default=None, help="default: the size the artifact was exported at")
    ap.add_argument("--conf", type=float, default=0.25)
    ap.add_argument("--iou-min", type=float, default=0.9)
    ap.add_argument("--conf-tol", type=float, default=0.02)
    ap.add_argument("--openvino-f32", action="store_true",
                    help="run an OpenVINO artifact at fp32 (CPUs with AVX512-BF16/AMX default to bf16)")
    a = ap.parse_args()
    # ultralytics and native runtimes (ncnn, MNN) print to stdout: send all of fd 1 to stderr, keep stdout for the JSON.
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)

    try:
        from ultralytics import YOLO

        if a.openvino_f32:
            # OpenVINO's CPU plugin infers in bf16 by default where the CPU has AVX512-BF16/AMX: near-zero confidences
            # of a barely trained model then change order under NMS. fp32 checks the exported graph itself.
            import openvino

            compile_model = openvino.Core.compile_model
            openvino.Core.compile_model = lambda core, model, device_name=None, config=None: compile_model(
                core, model, device_name, {**(config or {}), "INFERENCE_PRECISION_HINT": openvino.Type.f32}
            )

        # Predicted down to conf - conf_tol, so a counterpart just below the threshold is still seen.
        kw = dict(conf=max(a.conf - a.conf_tol, 1e-4), max_det=1000, device="cpu", verbose=False)
        artifact = YOLO(a.artifact, task="detect")
        art = artifact.predict(a.image, **kw, **({"imgsz": a.imgsz} if a.imgsz else {}))[0]
        # A fixed-size export predicts at its export size (from its metadata); the .pt predicts at that size too,
        # so both see the same letterboxed input.
        imgsz = list(artifact.predictor.imgsz)
        ref = YOLO(a.pt).predict(a.image, **kw, imgsz=imgsz)[0]
    except Exception as e:  # a load or predict failure is its own outcome, reported as JSON like the rest
        print(json.dumps({"ok": False, "details": {"error": f"{type(e).__name__}: {e}"}}), file=out, flush=True)
        return 2

    reference, candidate = boxes_of(ref), boxes_of(art)
    missing, pairs = match(reference, candidate, a.conf, a.iou_min, a.conf_tol)
    extra, _ = match(candidate, reference, a.conf, a.iou_min, a.conf_tol)
    problems = [{"pt_box_not_in_artifact": p} for p in missing] + [{"artifact_box_not_in_pt": p} for p in extra]
    above = lambda boxes: sum(b["conf"] >= a.conf for b in boxes)  # noqa: E731
    if not above(reference) and not above(candidate):
        problems.append({"error": f"neither model predicted a box at conf={a.conf}: nothing was compared"})
    ok = not problems
    details = {
        "imgsz": imgsz,
        "conf": a.conf,
        "pt_boxes": above(reference),
        "artifact_boxes": above(candidate),
        "matched": len(pairs),
        "min_iou": min((p["iou"] for p in pairs), default=None),
        "max_dconf": max((abs(p["dconf"]) for p in pairs), default=None),
        "problems": problems[:20],
    }
    print(json.dumps({"ok": ok, "details": details}), file=out, flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
