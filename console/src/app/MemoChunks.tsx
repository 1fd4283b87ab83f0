import { memo, type ReactNode } from 'react';

/** Items per chunk: an edit re-renders one chunk's elements, and a render compares as many chunks as this divides. */
const CHUNK = 100;

/**
 * Thousands of items (an image's labels) drawn in memoised chunks: a render after an edit of one item creates the
 * elements of its chunk only, not one per item. A chunk renders again when one of its items (by identity) or one of
 * `deps` (everything `renderItem` reads besides its item and index) changed. Chunks add no DOM (they are fragments)
 * unless given `chunkClassName`: then each is a div of that class, which CSS can skip while off screen.
 */
export function MemoChunks<T>({
  items,
  deps,
  renderItem,
  chunkClassName,
}: {
  items: readonly T[];
  deps: readonly unknown[];
  renderItem: (item: T, index: number) => ReactNode;
  chunkClassName?: string;
}) {
  const chunks = [];
  for (let start = 0; start < items.length; start += CHUNK)
    chunks.push(
      <Chunk
        key={start}
        items={items}
        start={start}
        deps={deps}
        renderItem={renderItem as (item: unknown, index: number) => ReactNode}
        className={chunkClassName}
      />,
    );
  return <>{chunks}</>;
}

interface ChunkProps {
  items: readonly unknown[];
  start: number;
  deps: readonly unknown[];
  renderItem: (item: unknown, index: number) => ReactNode;
  className: string | undefined;
}

const Chunk = memo(
  function Chunk({ items, start, renderItem, className }: ChunkProps) {
    const elements = [];
    for (let index = start; index < Math.min(items.length, start + CHUNK); index += 1)
      elements.push(renderItem(items[index], index));
    return className ? <div className={className}>{elements}</div> : <>{elements}</>;
  },
  // renderItem is a new closure each render: what it draws is told by the items and deps.
  (before, after) =>
    before.start === after.start &&
    before.className === after.className &&
    sameEntries(before.deps, after.deps, 0, Math.max(before.deps.length, after.deps.length)) &&
    sameEntries(before.items, after.items, before.start, before.start + CHUNK),
);

/** Whether both lists hold the same entries (by identity) at positions from `start` up to `end`, absent ones alike. */
function sameEntries(a: readonly unknown[], b: readonly unknown[], start: number, end: number): boolean {
  if (Math.min(a.length, end) !== Math.min(b.length, end)) return false;
  for (let index = start; index < Math.min(a.length, end); index += 1) if (a[index] !== b[index]) return false;
  return true;
}
