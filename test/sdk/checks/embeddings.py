"""Dataset analysis: the summary before, an analysis queued and followed to its end (every image gets a vector), its
2-D layout, a cancel with nothing in flight, and similar images of an analyzed image."""

import time

from registry import Context, check, expect, expect_fits


def _dataset(context: Context) -> tuple[str, str]:
    return context.owner, context.seeded["dataset"]


@check("datasets.create_embeddings")
def create_embeddings(context: Context):
    answer = context.client.datasets.create_embeddings(*_dataset(context))
    context.made["analysis_job"] = answer["jobId"]
    return answer


@check("datasets.embeddings")
def embeddings(context: Context):
    deadline = time.monotonic() + 60
    while True:
        answer = context.client.datasets.embeddings(*_dataset(context))
        expect_fits(answer, context.client.datasets.embeddings, "the summary while the analysis works")
        if answer["activeJob"] is None or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    images = context.client.datasets.images(*_dataset(context), limit=1)["total"]
    expect(answer["activeJob"] is None and answer["analyzedAt"] is not None, f"the analysis completed: {answer}")
    expect(answer["embeddingsCount"] == images, f"every one of the {images} images has a vector: {answer}")
    return answer


@check("datasets.clustering")
def clustering(context: Context):
    images = context.client.datasets.images(*_dataset(context), limit=1)["total"]
    answer = context.client.datasets.clustering(*_dataset(context), offset=0, limit=images)
    expect(answer["total"] == images and len(answer["images"]) == images and not answer["hasMore"], f"every image laid out on one page: {answer}")
    return answer


@check("datasets.delete_embeddings")
def delete_embeddings(context: Context):
    answer = context.client.datasets.delete_embeddings(*_dataset(context))
    expect(answer == {"cancelled": None}, f"nothing in flight to cancel: {answer}")
    return answer


@check("images.find_similar_images")
def find_similar_images(context: Context):
    image = context.client.datasets.images(*_dataset(context), limit=1)["images"][0]
    answer = context.client.images.find_similar_images(image["id"], include_source_dataset="true")
    expect(all(found["id"] != image["id"] and found["hash"] != image["hash"] for found in answer["images"]), f"the query and its copies are left out: {answer}")
    expect(len(answer["images"]) > 0, f"the dataset's other images are found with includeSourceDataset: {answer}")
    return answer
