import { keepPreviousData, useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client.ts';
import type { operations } from '../api/schema.d.ts';

export type PredictAnswer =
  operations['postApiModelsOwnerProjectModelPredict']['responses'][200]['content']['application/json'];
export type PredictedImage = PredictAnswer['images'][number];
export type ResultRow = PredictedImage['results'][number];

/** What runs the image: a model (its ONNX export on the control plane) or a deployment (its inference server). */
export type PredictTarget =
  | { kind: 'model'; owner: string; project: string; model: string }
  | { kind: 'deployment'; owner: string; deployment: string };

export interface PredictSettings {
  conf: number;
  iou: number;
}

/** The predict form: the file and the thresholds, as the API takes them (multipart/form-data). */
function predictForm(file: File, settings: PredictSettings): FormData {
  const form = new FormData();
  form.set('conf', String(settings.conf));
  form.set('iou', String(settings.iou));
  form.set('file', file);
  return form;
}

async function predict(target: PredictTarget, file: File, settings: PredictSettings): Promise<PredictAnswer> {
  const body = { conf: settings.conf, iou: settings.iou };
  const bodySerializer = () => predictForm(file, settings);
  if (target.kind === 'model') {
    const { owner, project, model } = target;
    return unwrap(
      await api.POST('/api/models/{owner}/{project}/{model}/predict', {
        params: { path: { owner, project, model } },
        body,
        bodySerializer,
      }),
    );
  }
  const { owner, deployment } = target;
  return unwrap(
    await api.POST('/api/deployments/{owner}/{deployment}/predict', {
      params: { path: { owner, deployment } },
      body,
      bodySerializer,
    }),
  );
}

/**
 * The predictions for this file at these thresholds; a changed threshold runs it again (each answer is kept, so going
 * back to a setting shows it at once) and the last answer stays drawn meanwhile.
 */
export function usePrediction(target: PredictTarget, file: File | undefined, settings: PredictSettings) {
  return useQuery({
    queryKey: ['predict', target, file?.name, file?.size, file?.lastModified, settings.conf, settings.iou],
    enabled: !!file,
    queryFn: () => predict(target, file!, settings),
    placeholderData: keepPreviousData,
    retry: false,
    staleTime: Infinity,
    gcTime: 5 * 60_000,
  });
}
