import { useVirtualizer } from '@tanstack/react-virtual';
import { useEffect, useState } from 'react';
import { imagePath, Link } from '../app/router.tsx';
import { SelectBox, type ImageListProps } from './ImageGrid.tsx';
import { ImageThumb } from './ImageThumb.tsx';

const ROW_HEIGHT = 56;

/** The same images as a table; rows outside the view are replaced by two spacer rows. */
export function ImageTable({
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
  const rows = useVirtualizer({
    count: images.length + (hasMore ? 1 : 0),
    getScrollElement: () => scroller,
    estimateSize: () => ROW_HEIGHT,
    overscan: 10,
  });
  const items = rows.getVirtualItems();
  const lastIndex = items.at(-1)?.index ?? 0;
  useEffect(() => {
    if (hasMore && lastIndex >= images.length - 20) loadMore();
  }, [hasMore, lastIndex, images.length, loadMore]);
  const before = items[0]?.start ?? 0;
  const after = rows.getTotalSize() - (items.at(-1)?.end ?? 0);
  return (
    <div ref={setScroller} className="scroller" tabIndex={0} role="region" aria-label="Image table">
      <table className="image-table">
        <thead>
          <tr>
            {selection ? (
              <th scope="col">
                <span className="visually-hidden">Selected</span>
              </th>
            ) : null}
            <th scope="col">Preview</th>
            <th scope="col">Name</th>
            <th scope="col">Split</th>
            <th scope="col">Size</th>
            <th scope="col">Labels</th>
            <th scope="col">Classes</th>
          </tr>
        </thead>
        <tbody>
          {before > 0 ? <tr aria-hidden="true" style={{ height: before }} /> : null}
          {items.map((row) => {
            const image = images[row.index];
            if (!image)
              return (
                <tr key={row.key} style={{ height: ROW_HEIGHT }}>
                  <td colSpan={selection ? 7 : 6} className="muted">
                    Loading more…
                  </td>
                </tr>
              );
            return (
              <tr key={row.key} style={{ height: ROW_HEIGHT }} data-image-id={image.id}>
                {selection ? (
                  <td>
                    <SelectBox id={image.id} name={image.name} selection={selection} />
                  </td>
                ) : null}
                <td className="table-thumb">
                  <ImageThumb image={image} classNames={classNames} classColors={classColors} />
                </td>
                <td>
                  <Link href={imagePath(owner, dataset, image.id)}>{image.name}</Link>
                </td>
                <td>{image.split ?? '—'}</td>
                <td>
                  {image.width} × {image.height}
                </td>
                <td>{image.labelCount}</td>
                <td>{[...new Set(image.classIds.map((id) => classNames[id] ?? id))].join(', ')}</td>
              </tr>
            );
          })}
          {after > 0 ? <tr aria-hidden="true" style={{ height: after }} /> : null}
        </tbody>
      </table>
    </div>
  );
}
