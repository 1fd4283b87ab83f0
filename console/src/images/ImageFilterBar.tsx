import { useEffect, useState } from 'react';
import type { ImageFilters, ImageSort, Split } from './queries.ts';

const SORT_LABELS: Record<ImageSort, string> = {
  newest: 'Newest',
  oldest: 'Oldest',
  'name-asc': 'Name A–Z',
  'name-desc': 'Name Z–A',
  'width-asc': 'Narrowest',
  'width-desc': 'Widest',
  'height-asc': 'Shortest',
  'height-desc': 'Tallest',
  'size-asc': 'Smallest file',
  'size-desc': 'Largest file',
  'labels-asc': 'Fewest labels',
  'labels-desc': 'Most labels',
};

export type GalleryView = 'grid' | 'table';

/** Class, split, labelled or not, search and sort filters, and the grid/table switch. The search waits for a pause in typing. */
export function ImageFilterBar(props: {
  classNames: string[];
  filters: ImageFilters;
  onChange: (filters: ImageFilters) => void;
  view: GalleryView;
  onView: (view: GalleryView) => void;
}) {
  const { filters, onChange } = props;
  const [search, setSearch] = useState(filters.search ?? '');
  useEffect(() => {
    const timer = setTimeout(() => {
      if ((filters.search ?? '') !== search.trim()) onChange({ ...filters, search: search.trim() || undefined });
    }, 300);
    return () => clearTimeout(timer);
  }, [search, filters, onChange]);
  return (
    <div className="toolbar" role="search" aria-label="Image filters">
      <label htmlFor="images-class">Class</label>
      <select
        id="images-class"
        value={filters.classId ?? ''}
        onChange={(event) =>
          onChange({ ...filters, classId: event.target.value === '' ? undefined : Number(event.target.value) })
        }
      >
        <option value="">All classes</option>
        {props.classNames.map((name, index) => (
          <option key={index} value={index}>
            {name}
          </option>
        ))}
      </select>
      <label htmlFor="images-split">Split</label>
      <select
        id="images-split"
        value={filters.split ?? ''}
        onChange={(event) => onChange({ ...filters, split: (event.target.value || undefined) as Split | undefined })}
      >
        <option value="">All splits</option>
        <option value="train">train</option>
        <option value="val">val</option>
        <option value="test">test</option>
      </select>
      <label htmlFor="images-labels">Labels</label>
      <select
        id="images-labels"
        value={filters.hasLabel === undefined ? '' : String(filters.hasLabel)}
        onChange={(event) =>
          onChange({ ...filters, hasLabel: event.target.value === '' ? undefined : event.target.value === 'true' })
        }
      >
        <option value="">Any</option>
        <option value="true">Labelled</option>
        <option value="false">Unlabelled</option>
      </select>
      <label htmlFor="images-search">Search images</label>
      <input id="images-search" type="search" value={search} onChange={(event) => setSearch(event.target.value)} />
      <label htmlFor="images-sort">Sort by</label>
      <select
        id="images-sort"
        value={filters.sort ?? 'newest'}
        onChange={(event) => onChange({ ...filters, sort: event.target.value as ImageSort })}
      >
        {Object.entries(SORT_LABELS).map(([value, label]) => (
          <option key={value} value={value}>
            {label}
          </option>
        ))}
      </select>
      <div role="group" aria-label="View" className="segmented">
        {(['grid', 'table'] as const).map((view) => (
          <button key={view} type="button" aria-pressed={props.view === view} onClick={() => props.onView(view)}>
            {view === 'grid' ? 'Grid' : 'Table'}
          </button>
        ))}
      </div>
    </div>
  );
}
