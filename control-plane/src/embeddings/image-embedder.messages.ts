// What ImageEmbedder (image-embedder.ts) and its thread (image-embedder.worker.ts) say to each other.

export interface EmbedderSetup {
  file: string;
  threads: number;
  mean: [number, number, number];
  std: [number, number, number];
  /** Images with more pixels are refused from their header, before decoding. */
  maxPixels: number;
}

export interface EmbedderRequest {
  id: number;
  images: Uint8Array[];
}

export type EmbedderReply =
  /** The session loaded (sent once, first). */
  | { kind: 'ready' }
  /** With an id: that batch failed as a whole; without: the model did not load. */
  | { kind: 'failed'; id?: number; message: string }
  /** One vector per image that decoded, in order; errors[i]: why image i did not (null where it did). */
  | { kind: 'embedded'; id: number; vectors: Float32Array[]; errors: Array<string | null> };
