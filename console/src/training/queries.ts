import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../api/client.ts';

/** GPU types with a connected host, by availability (High, Medium, Low); those with none are left out. */
export function useGpuAvailability() {
  return useQuery({
    queryKey: ['gpu-availability'],
    queryFn: async () => {
      const answer = unwrap(
        await api.GET('/api/training/gpu-availability', { params: { query: { managed: 'true' } } }),
      );
      return Object.entries(answer as Record<string, string | null>).filter(
        (entry): entry is [string, string] => typeof entry[1] === 'string',
      );
    },
    refetchInterval: 15_000,
  });
}

export function usePrices() {
  return useQuery({
    queryKey: ['prices'],
    queryFn: async () => unwrap(await api.GET('/api/billing/prices')),
    staleTime: 60_000,
  });
}

/** The workspace's credit balance, in cents. */
export function useCredits() {
  return useQuery({
    queryKey: ['credits'],
    queryFn: async () => unwrap(await api.GET('/api/account/summary')).creditsCents,
  });
}

export interface TrainingRequest {
  project: string;
  model: string;
  /** The display name; the URL name (model) is made from it. */
  name: string;
  trainArgs: { model: string; data: string; epochs: number; imgsz: number; batch?: number };
  gpuType: string;
}

/** Creates the model, then starts its training: the answer names the job and its estimate. */
export function useStartTraining(owner: string) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: async ({ project, model, name, trainArgs, gpuType }: TrainingRequest) => {
      const created = unwrap(await api.POST('/api/models', { body: { project, model, name, owner } }));
      const answer = await api.POST('/api/training/start', { body: { modelId: created.id, trainArgs, gpuType } });
      // Refused (no host, no credit): the model made for it goes too, so a retry may use its name.
      if (!answer.response.ok)
        await api.DELETE('/api/models/{owner}/{project}/{model}', { params: { path: { owner, project, model } } });
      return { ...unwrap(answer), model: created.model };
    },
    onSettled: (_, __, { project }) => queries.invalidateQueries({ queryKey: ['project', owner, project] }),
  });
}

const FINAL = new Set(['completed', 'failed', 'cancelled']);

/** The model's training (null before any), read every second until it ends (an epoch's curve shows within about 1 s). */
export function useTraining(owner: string, project: string, model: string) {
  return useQuery({
    queryKey: ['training', owner, project, model],
    queryFn: async () =>
      unwrap(
        await api.GET('/api/models/{owner}/{project}/{model}/training', {
          params: { path: { owner, project, model } },
        }),
      ).job,
    refetchInterval: (query) => (query.state.data && !FINAL.has(query.state.data.status) ? 1000 : false),
  });
}

export function useCancelTraining(owner: string, project: string, model: string) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: async () =>
      unwrap(
        await api.DELETE('/api/models/{owner}/{project}/{model}/training', {
          params: { path: { owner, project, model } },
        }),
      ),
    onSettled: () => queries.invalidateQueries({ queryKey: ['training', owner, project, model] }),
  });
}
