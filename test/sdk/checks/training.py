"""Training: GPU availability, starting a run, the metrics webhook."""

from registry import Context, check


@check("training.gpu_availability")
def gpu_availability(context: Context):
    return context.client.training.gpu_availability()


@check("training.start")
def start(context: Context):
    model = context.client.models.create(body={"project": context.seeded["project"], "model": "sdk-trainee", "task": "detect", "owner": context.owner})
    return context.client.training.start(model_id=model["id"], train_args={"data": f"ul://{context.owner}/datasets/{context.seeded['dataset']}", "model": "yolo11n.pt", "epochs": 1})


@check("training.metrics")
def metrics(context: Context):
    return context.client.training.metrics(event="console_output", data={"line": "hello"}, model_id=context.seeded["modelId"])
