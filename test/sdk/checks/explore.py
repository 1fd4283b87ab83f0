"""Explore: public datasets, projects and models of every workspace."""

from registry import Context, check, expect


@check("explore.search")
def search(context: Context):
    answer = context.client.explore.search()
    public = context.seeded["publicDataset"]
    expect(any(item["owner"] == public["owner"] and item["dataset"] == public["dataset"] for item in answer["datasets"]), "another workspace's public dataset is found")
    expect(all(item["visibility"] == "public" for item in answer["datasets"] + answer["projects"]), "only public resources")
    filtered = context.client.explore.search(type="datasets", q="no-such-thing-anywhere")
    expect(filtered["datasets"] == [], "q filters")
    return answer
