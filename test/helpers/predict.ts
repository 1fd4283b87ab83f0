// Arranging predict: a model with real weights and its automatic ONNX export as an agent would leave it (no agent here).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { Readable } from 'node:stream';
import type { EntityManager } from '@mikro-orm/postgresql';
import { normalizeArgs, type ExportArgs } from '../../control-plane/src/exports/export-args.ts';
import { insertCompletedExport } from '../../control-plane/src/exports/export.store.ts';
import { Model } from '../../control-plane/src/models/model.entity.ts';
import { onnxExportArgs } from '../../control-plane/src/predict/onnx-export.ts';
import { createModel, uploadWeights } from './models.ts';
import type { TestServer } from './server.ts';
import type { World } from './world.ts';
import type { TrainedModel } from './yolo-models.ts';

/** An ONNX export of the model (its automatic one unless `given` args say otherwise), completed with `onnxFile` as its artifact; returns the export's id. */
export async function seedOnnxExport(
  server: TestServer,
  modelId: string,
  onnxFile: string,
  given?: ExportArgs,
): Promise<string> {
  const em = server.orm.em.fork() as EntityManager;
  const model = await em.findOneOrFail(Model, modelId, { populate: ['workspace'] });
  const weights = await server.storage.store.get(model.fileKey!);
  const hash = createHash('sha256');
  for await (const chunk of weights!.stream) hash.update(chunk as Buffer);
  const weightsSha256 = hash.digest('hex');
  const args = normalizeArgs('onnx', given ?? onnxExportArgs(model));
  const fingerprint = createHash('sha256')
    .update(JSON.stringify([weightsSha256, 'onnx', args, null]))
    .digest('hex');
  const bytes = readFileSync(onnxFile);
  const key = `ws/${model.workspace.id}/exports/seeded-${fingerprint.slice(0, 12)}/model.onnx`;
  await server.storage.store.put(key, Readable.from([bytes]), {
    contentType: 'application/octet-stream',
    expectedBytes: bytes.length,
  });
  const file = {
    key,
    size: bytes.length,
    sha256: createHash('sha256').update(bytes).digest('hex'),
    name: `${model.slug}.onnx`,
  };
  return insertCompletedExport(
    em,
    {
      workspaceId: model.workspace.id,
      modelId,
      format: 'onnx',
      args,
      gpuType: null,
      weightsKey: model.fileKey!,
      weightsSha256,
      fingerprint,
    },
    file,
  );
}

/** A model of `key`'s in `project` with `fixture`'s weights and its ONNX export: what predict and deployments serve. */
export async function servableModel(
  world: World,
  key: string,
  project: string,
  slug: string,
  fixture: TrainedModel,
): Promise<string> {
  const model = await createModel(world, key, {
    project,
    model: slug,
    task: fixture.task,
    trainArgs: { imgsz: fixture.imgsz },
  });
  await uploadWeights(world, key, model.id, readFileSync(fixture.pt));
  await seedOnnxExport(world.server, model.id, fixture.onnx);
  return model.id;
}
