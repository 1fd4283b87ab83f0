import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../api/client.ts';

export type MemberRole = 'viewer' | 'editor' | 'admin';

/** The signed-in workspace's kind: a personal workspace has its owner only and takes no members. */
export function useWorkspaceKind() {
  return useQuery({
    queryKey: ['workspace-kind'],
    queryFn: async () => unwrap(await api.GET('/api/account/summary')).accountType,
    staleTime: 60_000,
  });
}

/** The workspace's members and their roles, by username. */
export function useMembers(owner: string) {
  return useQuery({
    queryKey: ['members', owner],
    queryFn: async () =>
      unwrap(await api.GET('/api/workspaces/{owner}/members', { params: { path: { owner } } })).members,
  });
}

/** Adds a user with a role, or changes a member's role (admins and the owner). */
export function useSetMemberRole(owner: string) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: async ({ username, role }: { username: string; role: MemberRole }) =>
      unwrap(
        await api.PUT('/api/workspaces/{owner}/members/{username}', {
          params: { path: { owner, username } },
          body: { role },
        }),
      ),
    onSettled: () => queries.invalidateQueries({ queryKey: ['members', owner] }),
  });
}

/** Removes a member; the keys issued for them stop working. */
export function useRemoveMember(owner: string) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: async (username: string) =>
      unwrap(await api.DELETE('/api/workspaces/{owner}/members/{username}', { params: { path: { owner, username } } })),
    onSettled: () => queries.invalidateQueries({ queryKey: ['members', owner] }),
  });
}
