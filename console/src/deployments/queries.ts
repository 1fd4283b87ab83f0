import { useInfiniteQuery, useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../api/client.ts';
import type { paths } from '../api/schema.d.ts';

type Body<P extends keyof paths, M extends 'post' | 'patch'> =
  NonNullable<NonNullable<paths[P][M]> extends { requestBody?: infer R } ? R : never> extends {
    content: { 'application/json': infer J };
  }
    ? J
    : never;
export type DeploymentCreate = Body<'/api/deployments/{owner}', 'post'>;
export type DeploymentChange = Body<'/api/deployments/{owner}/{deployment}', 'patch'>;
export type MetricRange = '1h' | '6h' | '24h' | '7d' | '30d';

/** States a deployment moves out of on its own: read it again every 2 s while in one. */
const MOVING = new Set(['creating', 'deploying', 'stopping']);

export function useDeployments(owner: string) {
  return useQuery({
    queryKey: ['deployments', owner],
    queryFn: async () =>
      unwrap(await api.GET('/api/deployments/{owner}', { params: { path: { owner }, query: { limit: 100 } } })),
    refetchInterval: (query) => (query.state.data?.deployments.some((item) => MOVING.has(item.status)) ? 2000 : 10_000),
  });
}

export function useDeployment(owner: string, deployment: string) {
  return useQuery({
    queryKey: ['deployment', owner, deployment],
    queryFn: async () =>
      unwrap(await api.GET('/api/deployments/{owner}/{deployment}', { params: { path: { owner, deployment } } }))
        .deployment,
    refetchInterval: (query) => (MOVING.has(query.state.data?.status ?? '') ? 2000 : 10_000),
  });
}

export function useCreateDeployment(owner: string) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: async (body: DeploymentCreate) =>
      unwrap(await api.POST('/api/deployments/{owner}', { params: { path: { owner } }, body })),
    onSettled: () => queries.invalidateQueries({ queryKey: ['deployments', owner] }),
  });
}

/** Stop, start, replace (another model, no downtime) or rename. */
export function useChangeDeployment(owner: string, deployment: string) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: async (body: DeploymentChange) =>
      unwrap(
        await api.PATCH('/api/deployments/{owner}/{deployment}', { params: { path: { owner, deployment } }, body }),
      ),
    onSettled: () =>
      Promise.all([
        queries.invalidateQueries({ queryKey: ['deployment', owner, deployment] }),
        queries.invalidateQueries({ queryKey: ['deployment-logs', owner, deployment] }),
      ]),
  });
}

export function useDeleteDeployment(owner: string, deployment: string) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: async () =>
      unwrap(await api.DELETE('/api/deployments/{owner}/{deployment}', { params: { path: { owner, deployment } } })),
    onSettled: () => queries.invalidateQueries({ queryKey: ['deployments', owner] }),
  });
}

/** Requests, errors and P95 latency over the range, read every 15 s. */
export function useDeploymentMetrics(owner: string, deployment: string, range: MetricRange) {
  return useQuery({
    queryKey: ['deployment-metrics', owner, deployment, range],
    queryFn: async () => {
      const answer = unwrap(
        await api.GET('/api/deployments/{owner}/{deployment}/metrics', {
          params: { path: { owner, deployment }, query: { range, view: 'overview' } },
        }),
      );
      if (!('timeSeries' in answer)) throw new Error('The appliance answered the sparkline');
      return answer;
    },
    refetchInterval: 15_000,
  });
}

/**
 * The log, newest first, filtered by severity and text on the server, 100 entries a page; the newest page is read
 * again every 3 s (a live tail) while `live`.
 */
export function useDeploymentLogs(
  owner: string,
  deployment: string,
  filter: { severities: string; search: string; live: boolean },
) {
  return useInfiniteQuery({
    queryKey: ['deployment-logs', owner, deployment, filter.severities, filter.search],
    initialPageParam: undefined as string | undefined,
    queryFn: async ({ pageParam }) =>
      unwrap(
        await api.GET('/api/deployments/{owner}/{deployment}/logs', {
          params: {
            path: { owner, deployment },
            query: {
              limit: 100,
              ...(filter.severities && { severity: filter.severities }),
              ...(filter.search && { search: filter.search }),
              ...(pageParam && { pageToken: pageParam }),
            },
          },
        }),
      ),
    getNextPageParam: (page) => page.nextPageToken,
    refetchInterval: filter.live ? 3000 : false,
  });
}
