"""Auto-annotation: one image's predictions, and a batch run followed to its end, then dismissed (with the seeded predict
model: a trained model whose classes are square, disc, triangle, its ONNX export in place; the seeded dataset has square
and disc). The same batch operation blurs faces: a preview of one image, applied once, and a preview discarded."""

import time

from ultralytics_platform import APIError

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


def _finished(context: Context, job_id: str) -> dict:
    """The run's summary once it has finished (GET answers fitting the SDK's type meanwhile)."""
    deadline = time.monotonic() + 60
    while True:
        answer = context.client.datasets.batch(*_dataset(context))
        expect_fits(answer, context.client.datasets.batch, "the run's status")
        last = answer["lastRun"]
        if answer["activeJob"] is None and last is not None and last["id"] == job_id:
            return last
        expect(time.monotonic() < deadline, f"the run {job_id} finished in time: {answer}")
        time.sleep(0.2)


def _blur(context: Context) -> None:
    """Face blur through create_batch: a preview changes nothing and shows its image; applied once (a second time: 409)."""
    image = context.client.datasets.images(*_dataset(context), limit=1)["images"][0]
    settings = {"operation": "blur", "confidence": 0.3, "boxScale": 1.2, "imageId": image["id"]}
    preview = context.client.datasets.create_batch(*_dataset(context), body={**settings, "preview": True})
    last = _finished(context, preview["jobId"])
    expect(last.get("operation") == "blur" and last.get("preview") is True and not last["failed"], f"the preview finished: {last}")
    previews = (last["results"] or {}).get("previews") or []
    expect([p["imageId"] for p in previews] == [image["id"]] and previews[0]["imageUrl"], f"the preview shows its one image: {previews}")
    after = context.client.datasets.images(*_dataset(context), limit=1)["images"][0]
    expect(after["hash"] == image["hash"], "a preview changes no image")
    applied = context.client.datasets.create_batch(*_dataset(context), body={**settings, "previewJobId": preview["jobId"]})
    last = _finished(context, applied["jobId"])
    expect(last.get("preview") is False and last["results"]["processed"] == 1, f"the preview was applied to its image: {last}")
    try:
        context.client.datasets.create_batch(*_dataset(context), body={**settings, "previewJobId": preview["jobId"]})
        expect(False, "an applied preview cannot be applied again")
    except APIError as error:
        expect(error.status_code == 409, f"an applied preview answers 409 (got {error.status_code})")
    discarded = context.client.datasets.create_batch(*_dataset(context), body={"operation": "blur", "preview": True})
    _finished(context, discarded["jobId"])
    answer = context.client.datasets.delete_batch(*_dataset(context), preview_job_id=discarded["jobId"])
    expect(answer == {"action": "dismissed", "jobId": discarded["jobId"]}, f"the preview is discarded: {answer}")


@check("datasets.create_batch")
def create_batch(context: Context):
    _blur(context)
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
