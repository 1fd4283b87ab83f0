import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../api/client.ts';

/** The workspace's worker hosts (then the appliance-wide pool's), read every 5 s: their state moves on its own. */
export function useHosts() {
  return useQuery({
    queryKey: ['hosts'],
    queryFn: async () => unwrap(await api.GET('/api/hosts')).hosts,
    refetchInterval: 5000,
  });
}

/** Connect (a new host's name) or rotate (a host's): a one-time token and the command that enrolls it. */
export function useEnrollment() {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: async ({ name, rotate }: { name: string; rotate: boolean }) =>
      rotate
        ? unwrap(await api.POST('/api/hosts/{name}/rotate', { params: { path: { name } } }))
        : unwrap(await api.POST('/api/hosts', { body: { name } })),
    onSettled: () => queries.invalidateQueries({ queryKey: ['hosts'] }),
  });
}

export function useDisconnect() {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: async (name: string) => unwrap(await api.DELETE('/api/hosts/{name}', { params: { path: { name } } })),
    onSettled: () => queries.invalidateQueries({ queryKey: ['hosts'] }),
  });
}
