import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../api/client.ts';

export function useProjects(owner: string) {
  return useQuery({
    queryKey: ['projects', owner],
    queryFn: async () =>
      unwrap(await api.GET('/api/projects/{owner}', { params: { path: { owner }, query: { limit: 500 } } })).projects,
  });
}

/** The project and its models; read again every 5 s while one of them trains, so their status moves on the page. */
export function useProject(owner: string, project: string) {
  return useQuery({
    queryKey: ['project', owner, project],
    queryFn: async () =>
      unwrap(await api.GET('/api/projects/{owner}/{project}', { params: { path: { owner, project } } })),
    refetchInterval: (query) => (query.state.data?.models.some((model) => ACTIVE.has(model.status)) ? 5000 : false),
  });
}

/** A model's statuses while its training is under way. */
export const ACTIVE = new Set(['starting', 'running']);

export function useCreateProject(owner: string) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: async (body: { project: string; name: string; description?: string }) =>
      unwrap(await api.POST('/api/projects', { body })),
    onSettled: () => queries.invalidateQueries({ queryKey: ['projects', owner] }),
  });
}
