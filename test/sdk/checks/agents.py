"""Agents (saved workflows): save, list (and read by id), delete."""

from registry import Context, check, expect, expect_fits


def _block(block_id: str, x: int, kind: str, label: str, config: dict) -> dict:
    return {"id": block_id, "type": "agent", "position": {"x": x, "y": 0}, "data": {"label": label, "type": kind, "config": config}}


# A chain as the SDK documents graphs: a Dataset block starts it, YOLO detects, Output ends it.
GRAPH = {
    "nodes": [
        _block("source", 0, "Dataset", "Shapes", {"dataset": "shapes", "split": "val", "maxInputs": 4}),
        _block("detect", 220, "YOLO", "Detect", {"model": "ul://alice/vision/detector", "task": "detect", "conf": 0.25}),
        _block("out", 440, "Output", "Results", {}),
    ],
    "edges": [{"id": "e1", "source": "source", "target": "detect"}, {"id": "e2", "source": "detect", "target": "out"}],
    "templateId": "",
}


@check("agents.save")
def save(context: Context):
    answer = context.client.agents.save(name="sdk-agent", graph=GRAPH, version=0, owner=context.owner)
    expect(answer["errors"] == [], f"a Dataset → YOLO → Output chain has nothing to flag: {answer['errors']}")
    context.made["agent"] = answer["id"]
    return answer


@check("agents.list")
def list_agents(context: Context):
    one = context.client.agents.list(owner=context.owner, id=context.made["agent"])
    expect_fits(one, context.client.agents.list, "the read by id")
    expect([agent["id"] for agent in one["workflows"]] == [context.made["agent"]] and one["workflows"][0]["graph"] == GRAPH, "id reads that agent with its graph")
    return context.client.agents.list(owner=context.owner)


@check("agents.delete")
def delete(context: Context):
    return context.client.agents.delete(id=context.made["agent"], owner=context.owner)
