"""Datasets: create, list, read, update, classes, splits, clone, adopt, images and their models."""

from registry import Context, check, expect


def _image_ids(context: Context, dataset: str) -> list[str]:
    return [image["id"] for image in context.client.datasets.images(context.owner, dataset, limit=100)["images"]]


@check("datasets.create")
def create(context: Context):
    answer = context.client.datasets.create(dataset="sdk-dataset", name="SDK dataset", task="detect", class_names=["circle", "square"], owner=context.owner)
    context.made["dataset"] = answer["dataset"]
    return answer


@check("datasets.list")
def list_datasets(context: Context):
    answer = context.client.datasets.list(context.owner, include_samples="true")
    shapes = next(item for item in answer["datasets"] if item["dataset"] == context.seeded["dataset"])
    expect(len(shapes.get("sampleImages", [])) > 0, "samples of a dataset with images")
    return answer


@check("datasets.retrieve")
def retrieve(context: Context):
    answer = context.client.datasets.retrieve(context.owner, context.seeded["dataset"])
    dataset = answer["dataset"]
    expect(dataset["imageCount"] == context.seeded["imageCount"], "all ingested images are counted")
    versions = dataset.get("versions") or []
    expect(len(versions) == 2 and all(version["imageCount"] == context.seeded["imageCount"] for version in versions), "both versions, with their image counts")
    return answer


@check("datasets.update")
def update(context: Context):
    dataset = context.made.get("dataset", "sdk-dataset")
    star = context.client.datasets.update(context.owner, dataset, starred=True)
    expect(star["starred"] is True and star["starCount"] == 1, "a star answers the new star count")
    return context.client.datasets.update(context.owner, dataset, description="updated by the SDK", class_colors={"0": "#ff0000"})


@check("datasets.class_stats")
def class_stats(context: Context):
    return context.client.datasets.class_stats(context.owner, context.seeded["dataset"])


@check("datasets.models")
def models(context: Context):
    return context.client.datasets.models(context.owner, context.seeded["dataset"])


@check("datasets.images")
def images(context: Context):
    answer = context.client.datasets.images(context.owner, context.seeded["dataset"], include_labels="true", include_total="true", include_thumbnails="true")
    expect(len(answer["images"]) == context.seeded["imageCount"], "every image is listed")
    return answer


@check("datasets.selected_images")
def selected_images(context: Context):
    ids = _image_ids(context, context.seeded["dataset"])[:2]
    answer = context.client.datasets.selected_images(context.owner, context.seeded["dataset"], image_ids=ids, include_labels="true")
    expect(sorted(image["id"] for image in answer["images"]) == sorted(ids), "exactly the selected images")
    return answer


@check("datasets.clone")
def clone(context: Context):
    answer = context.client.datasets.clone(context.owner, context.seeded["dataset"], dataset_body="sdk-scratch")
    context.made["scratch"] = answer["dataset"]
    return answer


@check("datasets.merge_classes")
def merge_classes(context: Context):
    return context.client.datasets.merge_classes(context.owner, context.made["scratch"], source_class_ids=[1], target_class_id=0)


@check("datasets.delete_classes")
def delete_classes(context: Context):
    return context.client.datasets.delete_classes(context.owner, context.made["scratch"], class_ids=[0])


@check("datasets.redistribute_splits")
def redistribute_splits(context: Context):
    return context.client.datasets.redistribute_splits(context.owner, context.made["scratch"], train=70, val=20, test=10)


@check("datasets.adopt_images")
def adopt_images(context: Context):
    source = _image_ids(context, context.seeded["dataset"])
    labelled = [image for image in context.client.datasets.images(context.owner, context.seeded["dataset"], include_labels="true")["images"] if image.get("labelCount")]
    target = context.client.datasets.create(dataset="sdk-adopter", name="adopter", task="detect", class_names=["square", "disc"], owner=context.owner)["dataset"]
    answer = context.client.datasets.adopt_images(context.owner, target, image_ids=source, release=False)
    adopted = context.client.datasets.images(context.owner, target, include_labels="true")["images"]
    expect(sum(1 for image in adopted if image.get("labelCount")) == len(labelled), "release false keeps the labels")
    splits = {image["name"]: image["split"] for image in context.client.datasets.images(context.owner, context.seeded["dataset"])["images"]}
    expect(len(adopted) == len(splits) and all(splits[image["name"]] == image["split"] for image in adopted), "release false keeps the splits")
    return answer


@check("datasets.delete")
def delete(context: Context):
    doomed = context.client.datasets.create(dataset="sdk-doomed", name="doomed", owner=context.owner)
    context.made["trashedDataset"] = doomed["id"]
    return context.client.datasets.delete(context.owner, doomed["dataset"])
