"""Models: create, list, read, update, files, clone, weights upload webhook, deletion."""

from registry import Context, check


def _seeded(context: Context) -> tuple[str, str, str]:
    return context.owner, context.seeded["project"], context.seeded["model"]


@check("models.create")
def create(context: Context):
    return context.client.models.create(body={"project": context.seeded["project"], "model": "sdk-model", "task": "detect", "owner": context.owner})


@check("models.list")
def list_models(context: Context):
    return context.client.models.list(context.owner, context.seeded["project"])


@check("models.retrieve")
def retrieve(context: Context):
    context.client.models.retrieve(*_seeded(context), analysis="1")
    return context.client.models.retrieve(*_seeded(context))


@check("models.update")
def update(context: Context):
    return context.client.models.update(context.owner, context.seeded["project"], "sdk-model", description="updated by the SDK", starred=True)


@check("models.files")
def files(context: Context):
    return context.client.models.files(*_seeded(context))


@check("models.clone")
def clone(context: Context):
    return context.client.models.clone(*_seeded(context), project_body=context.seeded["project"], model_body="sdk-model-copy")


@check("models.upload_checkpoint")
def upload_checkpoint(context: Context):
    return context.client.models.upload_checkpoint(filename="best.pt", model_id=context.seeded["modelId"])


@check("models.training")
def training(context: Context):
    return context.client.models.training(*_seeded(context))


@check("models.delete_training")
def delete_training(context: Context):
    return context.client.models.delete_training(context.owner, context.seeded["project"], "sdk-model")


@check("models.delete")
def delete(context: Context):
    return context.client.models.delete(context.owner, context.seeded["project"], "sdk-model-copy")
