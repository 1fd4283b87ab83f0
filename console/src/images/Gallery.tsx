import { useCallback, useMemo, useState } from 'react';
import { BulkActions } from './BulkActions.tsx';
import { ImageFilterBar, type GalleryView } from './ImageFilterBar.tsx';
import { ImageGrid } from './ImageGrid.tsx';
import { ImageTable } from './ImageTable.tsx';
import { useImagePages, type ImageFilters } from './queries.ts';
import { useSelection } from './selection.ts';

/** The dataset's images, filtered and sorted by the API, loaded page by page as the list scrolls. */
export function Gallery(props: {
  owner: string;
  dataset: string;
  classNames: string[];
  classColors: Record<string, string>;
  /** Offer multi-select with bulk split and delete (editors). */
  canEdit: boolean;
}) {
  const [filters, setFilters] = useState<ImageFilters>({ sort: 'newest' });
  const selection = useSelection();
  const changeFilters = (next: ImageFilters) => {
    selection.clear();
    setFilters(next);
  };
  const [view, setView] = useState<GalleryView>('grid');
  const pages = useImagePages(props.owner, props.dataset, filters);
  const images = useMemo(() => pages.data?.pages.flatMap((page) => page.images) ?? [], [pages.data]);
  const total = pages.data?.pages[0]?.total;
  const { hasNextPage, isFetchingNextPage, fetchNextPage } = pages;
  const loadMore = useCallback(() => {
    if (hasNextPage && !isFetchingNextPage) void fetchNextPage();
  }, [hasNextPage, isFetchingNextPage, fetchNextPage]);
  const shared = {
    owner: props.owner,
    dataset: props.dataset,
    images,
    hasMore: hasNextPage,
    loadMore,
    classNames: props.classNames,
    classColors: props.classColors,
    selection: props.canEdit ? selection : undefined,
  };
  return (
    <section aria-labelledby="gallery-heading" className="gallery">
      <h2 id="gallery-heading">Images</h2>
      <ImageFilterBar
        classNames={props.classNames}
        filters={filters}
        onChange={changeFilters}
        view={view}
        onView={setView}
      />
      <p role="status" className="muted">
        {pages.isPending
          ? 'Loading images…'
          : pages.error
            ? pages.error.message
            : `${(total ?? images.length).toLocaleString()} ${total === 1 ? 'image matches' : 'images match'}`}
      </p>
      {props.canEdit ? (
        <BulkActions owner={props.owner} dataset={props.dataset} classNames={props.classNames} selection={selection} />
      ) : null}
      {view === 'grid' ? <ImageGrid {...shared} /> : <ImageTable {...shared} />}
    </section>
  );
}
