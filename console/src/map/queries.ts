import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, ApiError, unwrap } from '../api/client.ts';

/** The layout's points in flat typed arrays: a million points cost tens of MB as objects, a few as arrays. */
export interface Layout {
  ids: string[];
  x: Float32Array;
  y: Float32Array;
  /** Island rank (-1 scattered). */
  island: Int32Array;
  /** 0 train, 1 val, 2 test, 3 none (missing). */
  split: Uint8Array;
  /** The image's first class, -1 for none. */
  firstClass: Int32Array;
  total: number;
}

const SPLITS = ['train', 'val', 'test'] as const;
const PAGE = 50_000;

async function layoutPage(owner: string, dataset: string, offset: number) {
  const answer = await api.GET('/api/datasets/{owner}/{dataset}/images/clustering', {
    params: { path: { owner, dataset }, query: { limit: PAGE, offset } },
  });
  return answer.response.status === 404 ? null : unwrap(answer); // 404: no analysis completed yet
}

async function loadLayout(owner: string, dataset: string): Promise<Layout | null> {
  const points: { id: string; x: number; y: number; island: number; split: number; firstClass: number }[] = [];
  let total = 0;
  let offset: number | null = 0;
  while (offset !== null) {
    const page = await layoutPage(owner, dataset, offset);
    if (!page) return null;
    total = page.total;
    for (const image of page.images) {
      if (image.missing) continue;
      points.push({
        id: image.id,
        x: image.umapX,
        y: image.umapY,
        island: image.cluster ?? -1,
        split: image.split ? SPLITS.indexOf(image.split) : 3,
        firstClass: image.classIds[0] ?? -1,
      });
    }
    offset = page.hasMore ? page.nextOffset : null;
  }
  return {
    ids: points.map((point) => point.id),
    x: Float32Array.from(points, (point) => point.x),
    y: Float32Array.from(points, (point) => point.y),
    island: Int32Array.from(points, (point) => point.island),
    split: Uint8Array.from(points, (point) => point.split),
    firstClass: Int32Array.from(points, (point) => point.firstClass),
    total,
  };
}

export function useLayout(owner: string, dataset: string) {
  return useQuery({
    queryKey: ['layout', owner, dataset],
    queryFn: () => loadLayout(owner, dataset),
  });
}

/** The dataset's analysis: when it last completed and the one in flight, asked for every second while one runs. */
export function useAnalysis(owner: string, dataset: string) {
  return useQuery({
    queryKey: ['analysis', owner, dataset],
    queryFn: async () =>
      unwrap(await api.GET('/api/datasets/{owner}/{dataset}/embeddings', { params: { path: { owner, dataset } } })),
    refetchInterval: (query) => (query.state.data?.activeJob ? 1000 : false),
  });
}

export function useStartAnalysis(owner: string, dataset: string) {
  const queries = useQueryClient();
  return useMutation({
    mutationFn: async () => {
      const answer = await api.POST('/api/datasets/{owner}/{dataset}/embeddings', {
        params: { path: { owner, dataset } },
      });
      if (answer.response.status === 409) throw new ApiError(409, 'An analysis is already running');
      return unwrap(answer);
    },
    onSettled: () => queries.invalidateQueries({ queryKey: ['analysis', owner, dataset] }),
  });
}
