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
    by_author = context.client.explore.search(author=public["owner"], task="detect,segment", min_images=0, max_images=1000, sort="stars", limit=5)
    expect([item["dataset"] for item in by_author["datasets"]] == [public["dataset"]], "author, task and image-count filters keep it")
    expect(context.client.explore.search(starred="true", license="MIT", sort="count-desc")["datasets"] == [], "starred and license filters")
    expect(context.client.explore.search(type="projects")["datasets"] == [], "type projects lists no datasets")
    return answer
