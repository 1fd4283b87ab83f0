import { useVersionCompare } from './queries.ts';

/** A comparison of two saved versions: the counts, class and field changes, then the changed images page by page. */
export function VersionCompare({
  owner,
  dataset,
  base,
  head,
}: {
  owner: string;
  dataset: string;
  base: number;
  head: number;
}) {
  const compare = useVersionCompare(owner, dataset, { base, head });
  if (compare.isPending)
    return (
      <p role="status">
        Comparing version {base} with version {head}…
      </p>
    );
  if (compare.error) return <p role="alert">{compare.error.message}</p>;
  const summary = compare.data.pages[0]?.summary;
  const items = compare.data.pages.flatMap((page) => page.items);
  const header = summary?.header;
  return (
    <div role="region" aria-label={`Version ${base} compared with version ${head}`} className="version-compare">
      {summary ? (
        <dl className="figures">
          <dt>Images added</dt>
          <dd>{summary.added.toLocaleString()}</dd>
          <dt>Images removed</dt>
          <dd>{summary.removed.toLocaleString()}</dd>
          <dt>Images changed</dt>
          <dd>{summary.modified.toLocaleString()}</dd>
          <dt>Images moved to another split</dt>
          <dd>{summary.moved.toLocaleString()}</dd>
          <dt>Labels added</dt>
          <dd>{summary.labelsAdded.toLocaleString()}</dd>
          <dt>Labels removed</dt>
          <dd>{summary.labelsRemoved.toLocaleString()}</dd>
        </dl>
      ) : null}
      {header && (header.classesAdded.length || header.classesRemoved.length || header.classesRenamed.length) ? (
        <p>
          Classes:{' '}
          {[
            ...header.classesAdded.map((name) => `+ ${name}`),
            ...header.classesRemoved.map((name) => `− ${name}`),
            ...header.classesRenamed.map((rename) => `${rename.from} → ${rename.to}`),
          ].join(', ')}
        </p>
      ) : null}
      {header && header.changed.length > 0 ? <p>Dataset fields changed: {header.changed.join(', ')}</p> : null}
      {items.length === 0 ? (
        <p className="muted">No image differs.</p>
      ) : (
        <table className="image-table">
          <caption className="visually-hidden">Changed images</caption>
          <thead>
            <tr>
              <th scope="col">Image</th>
              <th scope="col">Change</th>
              <th scope="col">Split</th>
              <th scope="col">Labels</th>
            </tr>
          </thead>
          <tbody>
            {items.map((item) => (
              <tr key={`${item.hash}-${item.name}-${item.change}`}>
                <td>{item.name}</td>
                <td>{item.fields.length ? `${item.change} (${item.fields.join(', ')})` : item.change}</td>
                <td>{[item.base?.split, item.head?.split].filter(Boolean).join(' → ')}</td>
                <td>
                  {item.base?.labelCount ?? 0} → {item.head?.labelCount ?? 0}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {compare.hasNextPage ? (
        <button type="button" disabled={compare.isFetchingNextPage} onClick={() => void compare.fetchNextPage()}>
          More changed images
        </button>
      ) : null}
    </div>
  );
}
