import { useQuery } from '@tanstack/react-query';
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
