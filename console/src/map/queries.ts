import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, ApiError, unwrap } from '../api/client.ts';

/** The layout's points in flat typed arrays: a million points cost tens of MB as objects, a few as arrays. */
export interface Layout {
  ids: string[];
  x: Float32Array;
  y: Float32Array;
  /** Island rank (-1 scattered). */
  island: Int32Array;
  /** 0 train, 1 val, 2 test. */
  split: Uint8Array;
  /** The image's first class, -1 for none. */
  firstClass: Int32Array;
}

/** GET .../images/clustering/points: 32 bytes a point (its description in the OpenAPI document says what each holds). */
const POINT_BYTES = 32;
const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/** The whole layout in one binary answer (a JSON page holds 50,000 points and costs a rate-limited request each). */
async function loadLayout(owner: string, dataset: string): Promise<Layout | null> {
  const answer = await api.GET('/api/datasets/{owner}/{dataset}/images/clustering/points', {
    params: { path: { owner, dataset } },
    parseAs: 'arrayBuffer',
  });
  if (answer.response.status === 404) return null; // no analysis completed yet
  const body = unwrap(answer) as unknown as ArrayBuffer;
  const count = Math.floor(body.byteLength / POINT_BYTES);
  const bytes = new Uint8Array(body);
  const words = new DataView(body);
  const layout: Layout = {
    ids: Array.from<string>({ length: count }),
    x: new Float32Array(count),
    y: new Float32Array(count),
    island: new Int32Array(count),
    split: new Uint8Array(count),
    firstClass: new Int32Array(count),
  };
  for (let index = 0, at = 0; index < count; index++, at += POINT_BYTES) {
    let id = '';
    for (let k = 0; k < 12; k++) id += HEX[bytes[at + k]!];
    layout.ids[index] = id;
    layout.x[index] = words.getFloat32(at + 12, true);
    layout.y[index] = words.getFloat32(at + 16, true);
    layout.island[index] = words.getInt32(at + 20, true);
    layout.firstClass[index] = words.getInt32(at + 24, true);
    layout.split[index] = bytes[at + 28]!;
  }
  return layout;
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
