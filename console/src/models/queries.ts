import { useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client.ts';

export function useModel(owner: string, project: string, model: string) {
  return useQuery({
    queryKey: ['model', owner, project, model],
    queryFn: async () => {
      const answer = unwrap(
        await api.GET('/api/models/{owner}/{project}/{model}', { params: { path: { owner, project, model } } }),
      );
      // Without ?analysis=1 the answer is the model (the per-image analysis is the other shape).
      if (!('model' in answer)) throw new Error('The appliance answered the model analysis');
      return answer.model;
    },
  });
}

/** The model's files (weights, results) with their download addresses. */
export function useModelFiles(owner: string, project: string, model: string, enabled: boolean) {
  return useQuery({
    queryKey: ['model-files', owner, project, model],
    enabled,
    queryFn: async () =>
      unwrap(
        await api.GET('/api/models/{owner}/{project}/{model}/files', { params: { path: { owner, project, model } } }),
      ).files,
  });
}
