"""Models: create, list, read (and its analysis), similar images of its worst, update, files, clone, the checkpoint upload webhook. Cancelling a
training is checked with the training group, which starts one."""

import base64

from registry import Context, check, expect, expect_fits


def _seeded(context: Context) -> tuple[str, str, str]:
    return context.owner, context.seeded["project"], context.seeded["model"]


@check("models.create")
def create(context: Context):
    answer = context.client.models.create(body={"project": context.seeded["project"], "model": "sdk-model", "task": "detect", "owner": context.owner})
    expect(answer["name"] == "sdk-model", "the name defaults to the URL name")
    return answer


@check("models.list")
def list_models(context: Context):
    answer = context.client.models.list(context.owner, context.seeded["project"])
    seeded = next(model for model in answer["models"] if model["model"] == context.seeded["model"])
    expect(seeded["hasWeights"] and seeded["projectName"] == context.seeded["project"], "the seeded model is listed with its weights")
    return answer


@check("models.retrieve")
def retrieve(context: Context):
    analysis = context.client.models.retrieve(*_seeded(context), analysis="1")
    expect_fits(analysis, context.client.models.retrieve, "the analysis=1 answer")
    expect(analysis == {"analysis": None}, "a model that never trained has no analysis")
    answer = context.client.models.retrieve(*_seeded(context))
    expect(answer["model"]["hasWeights"] and answer["isOwner"], "the owner reads the model with its weights")
    return answer


@check("models.find_similar_training_images")
def find_similar_training_images(context: Context):
    answer = context.client.models.find_similar_training_images(*_seeded(context))
    expect(answer == {"images": []}, f"a model that never trained recorded no per-image results, so nothing to search like: {answer}")
    return answer


@check("models.update")
def update(context: Context):
    star = context.client.models.update(context.owner, context.seeded["project"], "sdk-model", starred=True)
    expect(star["starred"] is True and star["starCount"] == 1, "a star answers the new star count")
    return context.client.models.update(context.owner, context.seeded["project"], "sdk-model", description="updated by the SDK")


@check("models.files")
def files(context: Context):
    return context.client.models.files(*_seeded(context))


@check("models.clone")
def clone(context: Context):
    answer = context.client.models.clone(*_seeded(context), project_body=context.seeded["project"], model_body="sdk-model-copy")
    expect(answer["model"] == "sdk-model-copy" and answer["name"] == context.seeded["model"], "the copy keeps the source's name")
    return answer


@check("models.upload_checkpoint")
def upload_checkpoint(context: Context):
    answer = context.client.models.upload_checkpoint(filename="best.pt", model_id=context.seeded["modelId"])
    expect(answer["modelId"] == context.seeded["modelId"], "the answer names the model")
    return answer


@check("models.training")
def training(context: Context):
    return context.client.models.training(*_seeded(context))


@check("models.delete")
def delete(context: Context):
    return context.client.models.delete(context.owner, context.seeded["project"], "sdk-model-copy")


@check("models.predict")
def predict(context: Context):
    image = base64.b64decode(context.seeded["predictImage"])
    at = (context.owner, context.seeded["project"], context.seeded["predictModel"])
    answer = context.client.models.predict(*at, body={"file": ("shapes.png", image, "image/png"), "conf": 0.25, "normalize": False})
    expect(answer["images"][0]["shape"] == [90, 120] and answer["metadata"]["task"] == "detect", "one image, its [height, width], the task")
    by_source = context.client.models.predict(*at, body={"source": context.seeded["predictImage"], "imgsz": 64})
    expect_fits(by_source, context.client.models.predict, "the answer to a base64 source")
    return answer
