import { useInfiniteQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client.ts';

/** What changed from one saved version to another, 100 images per page; the first page carries the summary. */
export function useVersionCompare(owner: string, dataset: string, pair: { base: number; head: number } | undefined) {
  return useInfiniteQuery({
    queryKey: ['version-compare', owner, dataset, pair],
    enabled: pair !== undefined,
    initialPageParam: undefined as string | undefined,
    queryFn: async ({ pageParam }) => {
      const answer = unwrap(
        await api.GET('/api/datasets/{owner}/{dataset}/versions/compare', {
          params: { path: { owner, dataset }, query: { base: pair!.base, head: pair!.head, cursor: pageParam } },
        }),
      );
      if (!('items' in answer)) throw new Error('The appliance answered one image, not a comparison');
      return answer;
    },
    getNextPageParam: (page) => page.nextCursor,
  });
}
