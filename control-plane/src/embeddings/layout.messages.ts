// What computeLayout (layout.ts) and its thread (layout.worker.ts) say to each other.

export interface LayoutSetup {
  /** count x dims float32, row-major: the vectors to lay out (unit length). */
  vectors: Float32Array;
  dims: number;
  seed: number;
  /** Whether further vectors will be placed on the layout: the thread then keeps an index of these vectors. */
  placing: boolean;
}

/** Further vectors to place on the layout, as LayoutSetup's vectors; answered by a `placed` reply. */
export interface PlaceRequest {
  vectors: Float32Array;
}

export type LayoutReply =
  /** Share of the optimisation done, 0-100 (the neighbour search before it is not measured). */
  | { kind: 'progress'; percent: number }
  /** [x0, y0, x1, y1, ...] in the vectors' order, and each point's island rank (-1 scattered). */
  | { kind: 'done'; xy: Float32Array; islands: Int32Array }
  /** The placed vectors' places and islands, in the request's order. */
  | { kind: 'placed'; xy: Float32Array; islands: Int32Array };
