"""Images: read, label edits, signed URLs, split moves and deletion."""

from registry import Context, check, expect


def _first_image(context: Context, dataset: str) -> dict:
    return context.client.datasets.images(context.owner, dataset, include_labels="true")["images"][0]


@check("images.retrieve")
def retrieve(context: Context):
    image = _first_image(context, context.seeded["dataset"])
    return context.client.images.retrieve(image["id"])


@check("images.update")
def update(context: Context):
    image = _first_image(context, context.made.get("scratch", context.seeded["dataset"]))
    return context.client.images.update(image["id"], body={"metadata": {"checkedBy": "sdk"}})


@check("images.urls")
def urls(context: Context):
    ids = [image["id"] for image in context.client.datasets.images(context.owner, context.seeded["dataset"])["images"][:2]]
    answer = context.client.images.urls(image_ids=ids)
    return answer


@check("images.update_bulk")
def update_bulk(context: Context):
    ids = [image["id"] for image in context.client.datasets.images(context.owner, context.made["scratch"])["images"][:2]]
    return context.client.images.update_bulk(image_ids=ids, split="test")


@check("images.delete")
def delete(context: Context):
    image = _first_image(context, context.made["scratch"])
    return context.client.images.delete(image["id"])


@check("images.delete_bulk")
def delete_bulk(context: Context):
    ids = [image["id"] for image in context.client.datasets.images(context.owner, context.made["scratch"])["images"][:1]]
    return context.client.images.delete_bulk(image_ids=ids)
