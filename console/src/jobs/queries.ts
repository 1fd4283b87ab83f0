import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../api/client.ts';

export type Job = Awaited<ReturnType<typeof fetchJob>>['job'];

const FINAL = new Set(['completed', 'failed', 'cancelled']);

export function isFinal(status: string): boolean {
  return FINAL.has(status);
}

async function fetchJob(jobId: string) {
  return unwrap(await api.GET('/api/jobs/{jobId}', { params: { path: { jobId } } }));
}

/** A job, asked for again every second until it ends. */
export function useJob(jobId: string | undefined) {
  return useQuery({
    queryKey: ['job', jobId],
    enabled: jobId !== undefined,
    queryFn: async () => (await fetchJob(jobId!)).job,
    refetchInterval: (query) => (query.state.data && isFinal(query.state.data.status) ? false : 1000),
  });
}

export type JobFilter = 'active' | 'all' | 'queued' | 'running' | 'completed' | 'failed' | 'cancelled';

/** The workspace's jobs across kinds, newest first, page after page (owners and admins); read again every 3 s. */
export function useJobQueue(filter: JobFilter, kind: string) {
  return useInfiniteQuery({
    queryKey: ['job-queue', filter, kind],
    initialPageParam: undefined as string | undefined,
    queryFn: async ({ pageParam }) =>
      unwrap(
        await api.GET('/api/jobs', {
          params: {
            query: {
              ...(filter !== 'all' && { status: filter }),
              ...(kind && { kind }),
              limit: 50,
              ...(pageParam && { cursor: pageParam }),
            },
          },
        }),
      ),
    getNextPageParam: (page) => page.nextCursor ?? undefined,
    refetchInterval: 3000,
  });
}

export function useCancelJob() {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: async (jobId: string) => unwrap(await api.DELETE('/api/jobs/{jobId}', { params: { path: { jobId } } })),
    onSettled: () => queries.invalidateQueries({ queryKey: ['job-queue'] }),
  });
}
