"""Training: GPU availability, starting a run and cancelling it, the metrics webhook of a run on your own machine.

The test seeds a connected pool host with one rtx-4090 that runs nothing: the run stays queued.
"""

from registry import Context, check, expect, expect_fits

GPU = "rtx-4090"


@check("training.gpu_availability")
def gpu_availability(context: Context):
    answer = context.client.training.gpu_availability()
    expect(answer.get(GPU) == "High" and answer.get("h100-sxm", "missing") is None, "the seeded host's free GPU is offered; an absent type is null")
    return answer


@check("training.start")
def start(context: Context):
    model = context.client.models.create(body={"project": context.seeded["project"], "model": "sdk-trainee", "task": "detect", "owner": context.owner})
    context.made["trainee"] = model["model"]
    # The appliance downloads nothing: a model YAML trains from scratch (ul:// weights fine-tune).
    train_args = {"data": f"ul://{context.owner}/datasets/{context.seeded['dataset']}", "model": "yolo11n.yaml", "epochs": 1, "imgsz": 32}
    answer = context.client.training.start(model_id=model["id"], train_args=train_args, gpu_type=GPU)
    job = context.client.models.training(context.owner, context.seeded["project"], model["model"])
    expect_fits(job, context.client.models.training, "the queued training")
    expect(job["job"]["status"] == "pending" and job["job"]["progress"]["totalEpochs"] == 1, "the run waits for its GPU")
    return answer


@check("models.delete_training")
def delete_training(context: Context):
    at = (context.owner, context.seeded["project"], context.made["trainee"])
    answer = context.client.models.delete_training(*at)
    job = context.client.models.training(*at)
    expect_fits(job, context.client.models.training, "the cancelled training")
    expect(job["job"]["status"] == "cancelled", "a queued training is cancelled at once")
    return answer


@check("training.metrics")
def metrics(context: Context):
    # A run on your own machine (`yolo train project=owner/project name=...` with a user key) starts by project and name.
    started = context.client.training.metrics(
        event="training_started", data={"trainArgs": {"epochs": 1}, "epochs": 1, "device": "cpu"}, project=f"{context.owner}/{context.seeded['project']}", name="sdk-laptop"
    )
    expect_fits(started, context.client.training.metrics, "the training_started answer")
    expect(started["modelSlug"] == "sdk-laptop" and started["mode"] == "remote", "the model is created under that name")
    return context.client.training.metrics(event="console_output", data={"content": "hello\n", "lineCount": 1, "chunkId": 0}, model_id=started["modelId"])
