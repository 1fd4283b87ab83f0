import { useMutation, useQuery } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../api/client.ts';
import { iou, type Label } from './geometry.ts';

/** A suggestion this close to a label of the same class already there is the same object: not added again. */
const DUPLICATE_IOU = 0.7;

/** The workspace's models that have weights, as ul:// addresses with a readable name. */
function useWorkspaceModels(owner: string) {
  return useQuery({
    queryKey: ['workspace-models', owner],
    queryFn: async () => {
      const { projects } = unwrap(await api.GET('/api/projects/{owner}', { params: { path: { owner } } }));
      const lists = await Promise.all(
        projects.map(async (project) => {
          const answer = unwrap(
            await api.GET('/api/models/{owner}/{project}', { params: { path: { owner, project: project.project } } }),
          );
          return answer.models.map((model) => ({
            uri: `ul://${owner}/${project.project}/${model.model}`,
            name: `${project.name} / ${model.name}`,
          }));
        }),
      );
      return lists.flat();
    },
  });
}

/** Labels keeping every current one, plus each prediction unless it duplicates one of the same class (IoU ≥ 0.7). */
export function mergeSuggestions(labels: Label[], predictions: Label[]): { merged: Label[]; skipped: number } {
  const fresh = predictions.filter(
    (prediction) =>
      !labels.some((label) => label.classId === prediction.classId && iou(label, prediction) >= DUPLICATE_IOU),
  );
  return { merged: [...labels, ...fresh], skipped: predictions.length - fresh.length };
}

/** Pre-fills labels from one of the workspace's own models (the image predict API); the result is an undoable edit. */
export function Suggestions({
  owner,
  imageId,
  labels,
  onSuggest,
}: {
  owner: string;
  imageId: string;
  labels: Label[];
  onSuggest: (merged: Label[], note: string) => void;
}) {
  const models = useWorkspaceModels(owner);
  const [chosen, setChosen] = useState<string | undefined>(undefined);
  const modelId = chosen ?? models.data?.[0]?.uri;
  const suggest = useMutation({
    mutationFn: async (model: string) =>
      unwrap(
        await api.POST('/api/images/{imageId}/predict', { params: { path: { imageId } }, body: { modelId: model } }),
      ),
    onSuccess: (answer) => {
      const { merged, skipped } = mergeSuggestions(labels, answer.predictions);
      const added = merged.length - labels.length;
      onSuggest(
        merged,
        `Suggested ${added} ${added === 1 ? 'label' : 'labels'}${skipped ? ` (${skipped} already there)` : ''}`,
      );
    },
  });
  if (!models.data || models.data.length === 0) return null;
  return (
    <div className="toolbar" role="group" aria-label="Suggestions">
      <label htmlFor="suggest-model">Suggest with</label>
      <select id="suggest-model" value={modelId} onChange={(event) => setChosen(event.target.value)}>
        {models.data.map((model) => (
          <option key={model.uri} value={model.uri}>
            {model.name}
          </option>
        ))}
      </select>
      <button type="button" disabled={!modelId || suggest.isPending} onClick={() => modelId && suggest.mutate(modelId)}>
        {suggest.isPending ? 'Suggesting…' : 'Suggest labels'}
      </button>
      {suggest.error ? <span role="alert">{suggest.error.message}</span> : null}
    </div>
  );
}
