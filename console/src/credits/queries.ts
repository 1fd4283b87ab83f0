import { useInfiniteQuery, useQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client.ts';

/** The workspace's credit balance, and whether billing is on and enforced. */
export function useBalance() {
  return useQuery({
    queryKey: ['billing-balance'],
    queryFn: async () => unwrap(await api.GET('/api/billing/balance')),
  });
}

/** The workspace's credit transactions, newest first, page after page (the API's cursor). */
export function useTransactions() {
  return useInfiniteQuery({
    queryKey: ['billing-transactions'],
    initialPageParam: undefined as string | undefined,
    queryFn: async ({ pageParam }) =>
      unwrap(
        await api.GET('/api/billing/transactions', {
          params: { query: { limit: 50, ...(pageParam && { cursor: pageParam, includeTotal: 'false' }) } },
        }),
      ),
    getNextPageParam: (page) => page.nextCursor ?? undefined,
  });
}
