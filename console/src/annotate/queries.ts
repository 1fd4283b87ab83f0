import { useMutation, useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client.ts';
import { useRefreshDataset } from '../datasets/queries.ts';
import type { Label } from './geometry.ts';

export function useImage(imageId: string) {
  return useQuery({
    queryKey: ['image', imageId],
    queryFn: async () => unwrap(await api.GET('/api/images/{imageId}', { params: { path: { imageId } } })),
    // The editor starts from what was read; a refetch must not replace labels being edited.
    staleTime: Infinity,
  });
}

/** Replaces the image's labels; the dataset's figures and lists are read again after. */
export function useSaveLabels(owner: string, dataset: string, imageId: string) {
  const refresh = useRefreshDataset(owner);
  return useMutation({
    mutationFn: async (labels: Label[]) =>
      unwrap(await api.PATCH('/api/images/{imageId}', { params: { path: { imageId } }, body: { labels } })),
    onSuccess: () => refresh(dataset),
  });
}
