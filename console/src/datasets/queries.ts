import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useCallback } from 'react';
import { api, unwrap } from '../api/client.ts';

export function useDatasets(owner: string) {
  return useQuery({
    queryKey: ['datasets', owner],
    queryFn: async () => unwrap(await api.GET('/api/datasets/{owner}', { params: { path: { owner } } })).datasets,
  });
}

export type DatasetItem = NonNullable<ReturnType<typeof useDataset>['data']>;

export function useDataset(owner: string, dataset: string) {
  return useQuery({
    queryKey: ['dataset', owner, dataset],
    queryFn: async () =>
      unwrap(await api.GET('/api/datasets/{owner}/{dataset}', { params: { path: { owner, dataset } } })).dataset,
  });
}

/** Class and image statistics over every image of the dataset (the API computes them, cached until it changes). */
export function useClassStats(owner: string, dataset: string) {
  return useQuery({
    queryKey: ['class-stats', owner, dataset],
    queryFn: async () =>
      unwrap(await api.GET('/api/datasets/{owner}/{dataset}/class-stats', { params: { path: { owner, dataset } } })),
  });
}

/** Stars or unstars for the signed-in user (any viewer may). */
export function useStar(owner: string) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: async ({ dataset, starred }: { dataset: string; starred: boolean }) =>
      unwrap(
        await api.PATCH('/api/datasets/{owner}/{dataset}', { params: { path: { owner, dataset } }, body: { starred } }),
      ),
    onSettled: () => queries.invalidateQueries({ queryKey: ['datasets', owner] }),
  });
}

/**
 * After a change to a dataset's images, labels or classes: what shows them is read again (the dataset and its figures,
 * its class statistics, its image pages, and the workspace's list with its counts).
 */
export function useRefreshDataset(owner: string) {
  const queries = useQueryClient();
  // Stable across renders: an effect may depend on it.
  return useCallback(
    async (dataset: string) => {
      for (const queryKey of [
        ['dataset', owner, dataset],
        ['class-stats', owner, dataset],
        ['images', owner, dataset],
        ['datasets', owner],
      ])
        await queries.invalidateQueries({ queryKey });
    },
    [queries, owner],
  );
}
