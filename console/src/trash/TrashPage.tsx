import { useState } from 'react';
import { useIdentity } from '../auth/identity.ts';
import { useErase, useRestore, useTrash, type TrashTarget, type TrashType } from './queries.ts';

type Trash = NonNullable<ReturnType<typeof useTrash>['data']>;
type Item = Trash['items'][number];

/**
 * The workspace's trash (owners and admins): projects, datasets and models deleted in the last 30 days, with the days
 * left before the purge; restore one, delete one permanently, or empty the trash.
 */
export function TrashPage() {
  const owner = useIdentity().data?.owner;
  const [page, setPage] = useState(1);
  const trash = useTrash(page);
  const restore = useRestore(owner);
  const erase = useErase(owner);
  const [done, setDone] = useState('');
  const pending = restore.isPending || erase.isPending;
  const onRestore = (item: Item) =>
    restore.mutate(target(item), {
      onSuccess: (answer) =>
        setDone(
          `${label(item)} was restored${answer.restoredModels ? ` with ${plural(answer.restoredModels, 'model')}` : ''}.`,
        ),
    });
  const onErase = (item: Item) => {
    const models = item.modelCount ? ` and its ${plural(item.modelCount, 'model')}` : '';
    if (!confirm(`Delete ${label(item)}${models} permanently? This cannot be undone.`)) return;
    erase.mutate(target(item), { onSuccess: () => setDone(`${label(item)} was deleted permanently.`) });
  };
  const onEmpty = () => {
    if (!confirm('Delete everything in the trash permanently? This cannot be undone.')) return;
    erase.mutate('all', {
      onSuccess: (answer) => {
        setPage(1);
        setDone(`The trash was emptied: ${plural(answer.deletedCount, 'item')} deleted permanently.`);
      },
    });
  };
  return (
    <>
      <h1>Trash</h1>
      <p className="muted">
        Deleted projects, datasets and models stay here for 30 days, then are deleted for good. A project comes back
        with the models deleted with it; deployments do not come back.
      </p>
      {trash.data ? <Summary trash={trash.data} pending={pending} empty={onEmpty} /> : null}
      {restore.error ? <p role="alert">{restore.error.message}</p> : null}
      {erase.error ? <p role="alert">{erase.error.message}</p> : null}
      <p role="status">{done}</p>
      {trash.error ? <p role="alert">{trash.error.message}</p> : null}
      {!trash.data && !trash.error ? <p role="status">Loading the trash…</p> : null}
      {trash.data && trash.data.items.length > 0 ? (
        <table className="models" aria-label="Trash">
          <thead>
            <tr>
              <th scope="col">Item</th>
              <th scope="col">Type</th>
              <th scope="col">Deleted</th>
              <th scope="col">Purged in</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {trash.data.items.map((item) => (
              <tr key={item.id}>
                <th scope="row">
                  {item.name} <span className="muted">{where(item)}</span>
                </th>
                <td>{item.type}</td>
                <td>{new Date(item.deletedAt).toLocaleString()}</td>
                <td>{plural(item.daysRemaining, 'day')}</td>
                <td>
                  <button
                    type="button"
                    aria-label={`Restore ${label(item)}`}
                    disabled={pending}
                    onClick={() => onRestore(item)}
                  >
                    Restore
                  </button>{' '}
                  <button
                    type="button"
                    aria-label={`Delete ${label(item)} permanently`}
                    disabled={pending}
                    onClick={() => onErase(item)}
                  >
                    Delete permanently
                  </button>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
      {trash.data && trash.data.totalPages > 1 ? (
        <nav className="toolbar" aria-label="Trash pages">
          <button type="button" disabled={page <= 1} onClick={() => setPage(page - 1)}>
            Newer
          </button>
          <span>
            Page {page} of {trash.data.totalPages}
          </span>
          <button type="button" disabled={page >= trash.data.totalPages} onClick={() => setPage(page + 1)}>
            Older
          </button>
        </nav>
      ) : null}
    </>
  );
}

function Summary({ trash, pending, empty }: { trash: Trash; pending: boolean; empty: () => void }) {
  const { summary } = trash;
  if (summary.total === 0) return <p>The trash is empty.</p>;
  return (
    <div className="toolbar">
      <span>
        {plural(summary.projects, 'project')}, {plural(summary.datasets, 'dataset')}, {plural(summary.models, 'model')}{' '}
        in trash
      </span>
      <button type="button" className="danger" disabled={pending} onClick={empty}>
        Empty the trash
      </button>
    </div>
  );
}

const target = (item: Item): TrashTarget => ({ id: item.id, type: item.type as TrashType });
const label = (item: Item) => `${item.type} ${item.name}`;
const where = (item: Item) => (item.project ? `${item.project}/${item.slug}` : item.slug);
const plural = (count: number, noun: string) => `${count} ${noun}${count === 1 ? '' : 's'}`;
