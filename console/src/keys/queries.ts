import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, unwrap } from '../api/client.ts';

const KEYS = ['api-keys'] as const;

/** The workspace's API keys (owner only): prefix, name, dates; never the key. Listing is rate-limited as a mutation. */
export function useApiKeys() {
  return useQuery({
    queryKey: KEYS,
    queryFn: async () => unwrap(await api.GET('/api/api-keys')).keys,
    staleTime: 30_000,
  });
}

/** A new key of the owner's (a password or OIDC session only): the answer carries the key, shown this once. */
export function useCreateKey() {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: async (name: string) => unwrap(await api.POST('/api/api-keys', { body: { name } })),
    onSettled: () => queries.invalidateQueries({ queryKey: KEYS }),
  });
}

/** Revokes a key (a password or OIDC session only): it stops working at once. */
export function useRevokeKey() {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: async (keyId: string) =>
      unwrap(await api.DELETE('/api/api-keys/{keyId}', { params: { path: { keyId } } })),
    onSettled: () => queries.invalidateQueries({ queryKey: KEYS }),
  });
}
