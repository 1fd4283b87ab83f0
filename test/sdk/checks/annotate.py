"""Auto-annotation: one image's predictions, and a batch run followed to its end, then dismissed (with the seeded predict
model: a trained model whose classes are square, disc, triangle, its ONNX export in place; the seeded dataset has square
and disc)."""

import time

from registry import Context, check, expect, expect_fits

CLASS_MAPPING = [0, 1, None]


def _dataset(context: Context) -> tuple[str, str]:
    return context.owner, context.seeded["dataset"]


def _model(context: Context) -> str:
    return f"ul://{context.owner}/{context.seeded['project']}/{context.seeded['predictModel']}"


@check("images.predict")
def predict(context: Context):
    image = context.client.datasets.images(*_dataset(context), limit=1)["images"][0]
    answer = context.client.images.predict(image["id"], model_id=_model(context), class_mapping=CLASS_MAPPING)
    expect(len(answer["predictions"]) == len(answer["confidences"]), "confidences are index-aligned with predictions")
    return answer


@check("datasets.create_batch")
def create_batch(context: Context):
    body = {"modelId": _model(context), "classMapping": CLASS_MAPPING, "includeAnnotated": True}
    answer = context.client.datasets.create_batch(*_dataset(context), body=body)
    context.made["batch_job"] = answer["jobId"]
    return answer


@check("datasets.batch")
def batch(context: Context):
    deadline = time.monotonic() + 60
    while True:
        answer = context.client.datasets.batch(*_dataset(context))
        expect_fits(answer, context.client.datasets.batch, "the run's status while it works")
        if answer["activeJob"] is None or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    last = answer["lastRun"]
    expect(last is not None and last["id"] == context.made["batch_job"] and not last["failed"], f"the run finished: {last}")
    return answer


@check("datasets.delete_batch")
def delete_batch(context: Context):
    answer = context.client.datasets.delete_batch(*_dataset(context))
    expect(answer == {"action": "dismissed", "jobId": context.made["batch_job"]}, f"the finished run is dismissed: {answer}")
    expect(context.client.datasets.batch(*_dataset(context))["lastRun"] is None, "no summary after dismissal")
    return answer
