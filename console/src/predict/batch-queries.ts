import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../api/client.ts';
import type { paths } from '../api/schema.d.ts';

const PATH = '/api/datasets/{owner}/{dataset}/predict/batch';
export type BatchRequest = NonNullable<paths[typeof PATH]['post']['requestBody']>['content']['application/json'];
export type BatchStatus = Awaited<ReturnType<typeof readStatus>>;

async function readStatus(owner: string, dataset: string) {
  return unwrap(await api.GET(PATH, { params: { path: { owner, dataset } } }));
}

/** The dataset's batch run (auto-annotation or face blur): the one under way, read every 2 s, or the last finished. */
export function useBatchStatus(owner: string, dataset: string) {
  return useQuery({
    queryKey: ['batch', owner, dataset],
    queryFn: () => readStatus(owner, dataset),
    refetchInterval: (query) => (query.state.data?.activeJob ? 2000 : false),
  });
}

/** Starts a run; when it ends the dataset's figures and images are read again (labels or images changed). */
export function useStartBatch(owner: string, dataset: string) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: async (body: BatchRequest) =>
      unwrap(await api.POST(PATH, { params: { path: { owner, dataset } }, body })),
    onSettled: () => queries.invalidateQueries({ queryKey: ['batch', owner, dataset] }),
  });
}

/** Cancels the run under way, dismisses the finished one, or (with previewJobId) discards a face blur preview. */
export function useEndBatch(owner: string, dataset: string) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: async (previewJobId?: string) =>
      unwrap(
        await api.DELETE(PATH, {
          params: { path: { owner, dataset }, query: previewJobId ? { previewJobId } : {} },
        }),
      ),
    onSettled: () => queries.invalidateQueries({ queryKey: ['batch', owner, dataset] }),
  });
}
