import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../api/client.ts';

export type TrashType = 'project' | 'dataset' | 'model';
export interface TrashTarget {
  id: string;
  type: TrashType;
}

const PAGE_SIZE = 50;

/** A page of the workspace's trash, most recently deleted first, with its totals by type. */
export function useTrash(page: number) {
  return useQuery({
    queryKey: ['trash', page],
    queryFn: async () => unwrap(await api.GET('/api/trash', { params: { query: { page, limit: PAGE_SIZE } } })),
    placeholderData: (previous) => previous,
  });
}

/** After a restore or a deletion: the trash, and the lists a restored item comes back to. */
function useSettle(owner: string | undefined) {
  const queries = useQueryClient();
  return async () => {
    await queries.invalidateQueries({ queryKey: ['trash'] });
    if (owner) {
      await queries.invalidateQueries({ queryKey: ['datasets', owner] });
      await queries.invalidateQueries({ queryKey: ['projects', owner] });
    }
  };
}

/** Brings an item back (a project with the models deleted with it). */
export function useRestore(owner: string | undefined) {
  const settle = useSettle(owner);
  return useMutation({
    mutationFn: async (target: TrashTarget) => unwrap(await api.POST('/api/trash', { body: target })),
    onSettled: settle,
  });
}

/** Deletes one item permanently, or everything in the trash (`all`); irreversible. */
export function useErase(owner: string | undefined) {
  const settle = useSettle(owner);
  return useMutation({
    mutationFn: async (target: TrashTarget | 'all') =>
      unwrap(await api.DELETE('/api/trash', { body: target === 'all' ? { all: true } : target })),
    onSettled: settle,
  });
}
