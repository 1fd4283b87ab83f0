import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { api, ApiError, unwrap } from '../api/client.ts';

/** GET .../images/clustering/points: 32 bytes a point, big-endian (its description in the OpenAPI document). */
const POINT_BYTES = 32;
const ID_BYTES = 12;
const HEX = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));

/**
 * The layout's points in flat typed arrays, in image ID order: a million points cost tens of MB as objects, a few as
 * arrays. Image IDs stay in the answer's bytes until asked for (idAt): making a million strings took longer than the rest.
 */
export interface Layout {
  count: number;
  /** The answer: the records the IDs are read from. */
  records: Uint8Array;
  x: Float32Array;
  y: Float32Array;
  /** Island rank (-1 scattered). */
  island: Int32Array;
  /** 0 train, 1 val, 2 test. */
  split: Uint8Array;
  /** The image's first class, -1 for none. */
  firstClass: Int32Array;
}

export function idAt(layout: Layout, index: number): string {
  let id = '';
  for (let at = index * POINT_BYTES, end = at + ID_BYTES; at < end; at++) id += HEX[layout.records[at]!];
  return id;
}

/** Which points are these images' (binary search over the IDs' bytes: the points are in ID order); 1 for each. */
export function pointsOf(layout: Layout, ids: Iterable<string>): Uint8Array {
  const marked = new Uint8Array(layout.count);
  const wanted = new Uint8Array(ID_BYTES);
  const compare = (index: number) => {
    for (let k = 0; k < ID_BYTES; k++) {
      const difference = layout.records[index * POINT_BYTES + k]! - wanted[k]!;
      if (difference !== 0) return difference;
    }
    return 0;
  };
  for (const id of ids) {
    for (let k = 0; k < ID_BYTES; k++) wanted[k] = parseInt(id.slice(2 * k, 2 * k + 2), 16);
    let [low, high] = [0, layout.count - 1];
    while (low <= high) {
      const middle = (low + high) >> 1;
      const order = compare(middle);
      if (order === 0) {
        marked[middle] = 1;
        break;
      }
      if (order < 0) low = middle + 1;
      else high = middle - 1;
    }
  }
  return marked;
}

/** The whole layout in one binary answer (a JSON page holds 50,000 points and costs a rate-limited request each). */
async function loadLayout(owner: string, dataset: string): Promise<Layout | null> {
  const answer = await api.GET('/api/datasets/{owner}/{dataset}/images/clustering/points', {
    params: { path: { owner, dataset } },
    parseAs: 'arrayBuffer',
  });
  if (answer.response.status === 404) return null; // no analysis completed yet
  const body = unwrap(answer) as unknown as ArrayBuffer;
  const count = Math.floor(body.byteLength / POINT_BYTES);
  const fields = new DataView(body);
  const layout: Layout = {
    count,
    records: new Uint8Array(body),
    x: new Float32Array(count),
    y: new Float32Array(count),
    island: new Int32Array(count),
    split: new Uint8Array(count),
    firstClass: new Int32Array(count),
  };
  for (let index = 0, at = ID_BYTES; index < count; index++, at += POINT_BYTES) {
    layout.x[index] = fields.getFloat32(at);
    layout.y[index] = fields.getFloat32(at + 4);
    layout.island[index] = fields.getInt32(at + 8);
    layout.firstClass[index] = fields.getInt32(at + 12);
    layout.split[index] = fields.getInt32(at + 16);
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
