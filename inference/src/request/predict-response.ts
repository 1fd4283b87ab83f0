// The answer to a predict request, the same whoever ran the model: ultralytics' Results.summary() rows, the dense
// outputs as PNGs, and the metadata of the hosted API.
import type { ModelInfo } from '../model-info.ts';
import type { Prediction } from '../prediction.ts';
import { summarize } from '../summary.ts';
import { denseOutputs } from './dense-outputs.ts';
import type { PredictParameters } from './predict-parameters.ts';

export async function predictResponse(
  run: { prediction: Prediction; info: ModelInfo },
  parameters: PredictParameters,
  call: { model: string; startedAt: number },
) {
  const { prediction, info } = run;
  const results = summarize(prediction, info.names, { normalize: parameters.normalize, decimals: parameters.decimals });
  return {
    images: [
      {
        shape: prediction.shape,
        speed: prediction.speed,
        results,
        ...(await denseOutputs(prediction, parameters.bits)),
      },
    ],
    metadata: {
      imageCount: 1,
      classNames: info.names,
      functionTimeAlive: process.uptime(),
      functionTimeCall: (performance.now() - call.startedAt) / 1000,
      /** owner/project/model */
      model: call.model,
      task: info.task,
      version: { runtime: 'onnxruntime-node', node: process.versions.node },
    },
  };
}
