import { useInfiniteQuery } from '@tanstack/react-query';
import { api, unwrap } from '../api/client.ts';

export type Split = 'train' | 'val' | 'test';
export type ImageSort = NonNullable<ImageFilters['sort']>;

export interface ImageFilters {
  classId?: number;
  split?: Split;
  /** true: images with labels only; false: without. */
  hasLabel?: boolean;
  search?: string;
  sort?:
    | 'newest'
    | 'oldest'
    | 'name-asc'
    | 'name-desc'
    | 'height-asc'
    | 'height-desc'
    | 'width-asc'
    | 'width-desc'
    | 'size-asc'
    | 'size-desc'
    | 'labels-asc'
    | 'labels-desc';
}

const PAGE_SIZE = 200;

/** Keyset pages of the images list (the cursor is the last image's id), thumbnails and label previews included. */
export function useImagePages(owner: string, dataset: string, filters: ImageFilters) {
  return useInfiniteQuery({
    queryKey: ['images', owner, dataset, filters],
    initialPageParam: undefined as string | undefined,
    queryFn: async ({ pageParam }) =>
      unwrap(
        await api.GET('/api/datasets/{owner}/{dataset}/images', {
          params: {
            path: { owner, dataset },
            query: {
              limit: PAGE_SIZE,
              cursor: pageParam,
              // The total is counted once, with the first page.
              includeTotal: pageParam ? 'false' : 'true',
              includeThumbnails: 'true',
              includeLabels: 'true',
              split: filters.split,
              classIds: filters.classId === undefined ? undefined : String(filters.classId),
              search: filters.search || undefined,
              hasLabel: filters.hasLabel === undefined ? undefined : String(filters.hasLabel),
              sort: filters.sort,
            },
          },
        }),
      ),
    getNextPageParam: (page) => (page.hasMore ? page.nextCursor : undefined),
  });
}

export type ImagePage = NonNullable<ReturnType<typeof useImagePages>['data']>['pages'][number];
export type ImageItem = ImagePage['images'][number];
