import { useMemo, useState } from 'react';

import { datasetPath, Link } from '../app/router.tsx';
import { useCanEdit } from '../auth/identity.ts';
import { CreateDataset } from './CreateDataset.tsx';
import { StarButton } from './StarButton.tsx';
import { useDatasets, useStar } from './queries.ts';

type DatasetItem = NonNullable<ReturnType<typeof useDatasets>['data']>[number];

const SORTS = {
  updated: {
    label: 'Recently updated',
    compare: (a: DatasetItem, b: DatasetItem) => b.updatedAt.localeCompare(a.updatedAt),
  },
  name: { label: 'Name', compare: (a: DatasetItem, b: DatasetItem) => a.name.localeCompare(b.name) },
  images: { label: 'Most images', compare: (a: DatasetItem, b: DatasetItem) => b.imageCount - a.imageCount },
  stars: { label: 'Most stars', compare: (a: DatasetItem, b: DatasetItem) => b.starCount - a.starCount },
} as const;
type SortName = keyof typeof SORTS;

export function DatasetsPage({ owner }: { owner: string }) {
  const datasets = useDatasets(owner);
  const star = useStar(owner);
  const canEdit = useCanEdit(owner);
  const [search, setSearch] = useState('');
  const [sort, setSort] = useState<SortName>('updated');
  const shown = useMemo(() => {
    const needle = search.trim().toLowerCase();
    const matching = (datasets.data ?? []).filter(
      (item) =>
        !needle ||
        `${item.name} ${item.dataset} ${item.description} ${item.tags.join(' ')}`.toLowerCase().includes(needle),
    );
    return matching.sort(SORTS[sort].compare);
  }, [datasets.data, search, sort]);

  return (
    <>
      <h1>Datasets of {owner}</h1>
      {canEdit ? <CreateDataset owner={owner} /> : null}
      <div className="toolbar" role="search">
        <label htmlFor="datasets-search">Search datasets</label>
        <input id="datasets-search" type="search" value={search} onChange={(event) => setSearch(event.target.value)} />
        <label htmlFor="datasets-sort">Sort by</label>
        <select id="datasets-sort" value={sort} onChange={(event) => setSort(event.target.value as SortName)}>
          {Object.entries(SORTS).map(([name, { label }]) => (
            <option key={name} value={name}>
              {label}
            </option>
          ))}
        </select>
      </div>
      {datasets.isPending ? <p role="status">Loading datasets…</p> : null}
      {datasets.error ? <p role="alert">{datasets.error.message}</p> : null}
      {datasets.data && shown.length === 0 ? (
        <p role="status">{search ? 'No dataset matches the search.' : 'This workspace has no datasets yet.'}</p>
      ) : null}
      <ul className="dataset-list" aria-label="Datasets">
        {shown.map((item) => (
          <li key={item.id} className="card dataset-card">
            <h2>
              <Link href={datasetPath(item.owner, item.dataset)}>{item.name}</Link>
            </h2>
            <p className="muted">{item.description || item.dataset}</p>
            <dl className="figures">
              <dt>Task</dt>
              <dd>{item.task}</dd>
              <dt>Images</dt>
              <dd>{item.imageCount.toLocaleString()}</dd>
              <dt>Classes</dt>
              <dd>{item.classCount.toLocaleString()}</dd>
            </dl>
            <StarButton
              name={item.name}
              starred={item.isStarred}
              count={item.starCount}
              busy={star.isPending}
              onToggle={() => star.mutate({ dataset: item.dataset, starred: !item.isStarred })}
            />
          </li>
        ))}
      </ul>
    </>
  );
}
