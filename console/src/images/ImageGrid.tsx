import { useVirtualizer } from '@tanstack/react-virtual';
import { useEffect, useState } from 'react';
import { imagePath, Link } from '../app/router.tsx';
import { ImageThumb } from './ImageThumb.tsx';
import type { ImageItem } from './queries.ts';
import type { Selection } from './selection.ts';

const CELL_WIDTH = 190;
const ROW_HEIGHT = 210;

export interface ImageListProps {
  owner: string;
  dataset: string;
  images: ImageItem[];
  hasMore: boolean;
  loadMore: () => void;
  classNames: string[];
  classColors: Record<string, string>;
  /** Present when images may be picked for a bulk action. */
  selection?: Selection;
}

/** Rows of thumbnails; only the rows in view (and a few around) are in the page, so the length does not matter. */
export function ImageGrid({
  owner,
  dataset,
  images,
  hasMore,
  loadMore,
  classNames,
  classColors,
  selection,
}: ImageListProps) {
  const [scroller, setScroller] = useState<HTMLDivElement | null>(null);
  const columns = useColumns(scroller);
  const rowCount = Math.ceil(images.length / columns) + (hasMore ? 1 : 0);
  const rows = useVirtualizer({
    count: rowCount,
    getScrollElement: () => scroller,
    estimateSize: () => ROW_HEIGHT,
    overscan: 3,
  });
  const items = rows.getVirtualItems();
  const lastIndex = items.at(-1)?.index ?? 0;
  useEffect(() => {
    if (hasMore && lastIndex >= rowCount - 4) loadMore();
  }, [hasMore, lastIndex, rowCount, loadMore]);

  return (
    <div ref={setScroller} className="scroller" tabIndex={0} role="region" aria-label="Image grid">
      <ul className="grid-space" style={{ height: rows.getTotalSize() }} aria-label="Images">
        {items.map((row) => {
          const start = row.index * columns;
          const slice = images.slice(start, start + columns);
          return (
            <li
              key={row.key}
              className="grid-row"
              style={{ transform: `translateY(${row.start}px)`, gridTemplateColumns: `repeat(${columns}, 1fr)` }}
            >
              {slice.length === 0 ? <span className="muted">Loading more…</span> : null}
              {slice.map((image) => (
                <figure key={image.id} className="grid-cell" data-image-id={image.id}>
                  {selection ? <SelectBox name={image.name} id={image.id} selection={selection} /> : null}
                  <ImageThumb image={image} classNames={classNames} classColors={classColors} />
                  <figcaption title={image.name}>
                    <Link href={imagePath(owner, dataset, image.id)}>{image.name}</Link>
                  </figcaption>
                </figure>
              ))}
            </li>
          );
        })}
      </ul>
    </div>
  );
}

function useColumns(element: HTMLElement | null): number {
  const [width, setWidth] = useState(960);
  useEffect(() => {
    if (!element) return;
    const observer = new ResizeObserver(([entry]) => entry && setWidth(entry.contentRect.width));
    observer.observe(element);
    return () => observer.disconnect();
  }, [element]);
  return Math.max(1, Math.floor(width / CELL_WIDTH));
}

/** A labelled checkbox that picks one image for a bulk action. */
export function SelectBox({ id, name, selection }: { id: string; name: string; selection: Selection }) {
  return (
    <input
      type="checkbox"
      className="select-box"
      aria-label={`Select ${name}`}
      checked={selection.isSelected(id)}
      onChange={() => selection.toggle(id)}
    />
  );
}
