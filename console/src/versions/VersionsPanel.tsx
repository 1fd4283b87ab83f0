import { useMutation } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../api/client.ts';
import { useRefreshDataset } from '../datasets/queries.ts';
import { VersionCompare } from './VersionCompare.tsx';

interface SavedVersion {
  version: number;
  createdAt: string;
  description?: string;
  imageCount: number;
  annotationCount: number;
}

/**
 * The dataset's saved versions: save the current state as a new one, download one as NDJSON, compare two, and
 * restore one (editors, after a second confirmation: the dataset's images are replaced by the version's).
 */
export function VersionsPanel({
  owner,
  dataset,
  versions,
  canEdit,
}: {
  owner: string;
  dataset: string;
  versions: SavedVersion[];
  canEdit: boolean;
}) {
  const [description, setDescription] = useState('');
  const [outcome, setOutcome] = useState('');
  const [restoring, setRestoring] = useState<number | undefined>(undefined);
  // Unless chosen, the newest version compared with the one before it.
  const newest = versions.at(-1)?.version ?? 1;
  const [chosenBase, setBase] = useState<number | undefined>(undefined);
  const [chosenHead, setHead] = useState<number | undefined>(undefined);
  const base = chosenBase ?? Math.max(1, newest - 1);
  const head = chosenHead ?? newest;
  const [compared, setCompared] = useState<{ base: number; head: number } | undefined>(undefined);
  const refresh = useRefreshDataset(owner);
  const path = { params: { path: { owner, dataset } } };
  const save = useMutation({
    mutationFn: async () =>
      unwrap(
        await api.POST('/api/datasets/{owner}/{dataset}/export', {
          ...path,
          body: { description: description || undefined, download: false },
        }),
      ),
    onSuccess: async (saved) => {
      setOutcome(
        saved.reused
          ? `Nothing changed since version ${saved.version}, which is kept`
          : `Saved as version ${saved.version}`,
      );
      setDescription('');
      await refresh(dataset);
    },
  });
  const restore = useMutation({
    mutationFn: async (version: number) =>
      unwrap(await api.POST('/api/datasets/{owner}/{dataset}/restore', { ...path, body: { version } })),
    onSuccess: async (restored) => {
      setOutcome(`Restored version ${restored.version}: ${restored.imageCount.toLocaleString()} images`);
      setRestoring(undefined);
      await refresh(dataset);
    },
  });
  const download = useMutation({
    mutationFn: async (version: number) =>
      unwrap(
        await api.GET('/api/datasets/{owner}/{dataset}/export', { params: { ...path.params, query: { v: version } } }),
      ),
    onSuccess: (answer) => location.assign(answer.downloadUrl),
  });
  const error = save.error ?? restore.error ?? download.error;
  return (
    <section className="card versions" aria-labelledby="versions-heading">
      <h2 id="versions-heading">Versions</h2>
      {canEdit ? (
        <form
          className="toolbar"
          aria-label="Save a version"
          onSubmit={(event) => {
            event.preventDefault();
            save.mutate();
          }}
        >
          <label htmlFor="version-description">Description (optional)</label>
          <input
            id="version-description"
            maxLength={1000}
            value={description}
            onChange={(event) => setDescription(event.target.value)}
          />
          <button type="submit" disabled={save.isPending}>
            Save a version
          </button>
        </form>
      ) : null}
      <p role="status">{error ? '' : outcome}</p>
      {error ? <p role="alert">{error.message}</p> : null}
      {versions.length === 0 ? (
        <p className="muted">No version saved yet.</p>
      ) : (
        <table className="image-table">
          <caption className="visually-hidden">Saved versions</caption>
          <thead>
            <tr>
              <th scope="col">Version</th>
              <th scope="col">Saved</th>
              <th scope="col">Description</th>
              <th scope="col">Images</th>
              <th scope="col">Annotations</th>
              <th scope="col">Actions</th>
            </tr>
          </thead>
          <tbody>
            {[...versions].reverse().map((saved) => (
              <tr key={saved.version}>
                <td>v{saved.version}</td>
                <td>{new Date(saved.createdAt).toLocaleString()}</td>
                <td>{saved.description ?? '—'}</td>
                <td>{saved.imageCount.toLocaleString()}</td>
                <td>{saved.annotationCount.toLocaleString()}</td>
                <td>
                  <button type="button" onClick={() => download.mutate(saved.version)}>
                    Download v{saved.version}
                  </button>{' '}
                  {canEdit && restoring !== saved.version ? (
                    <button type="button" onClick={() => setRestoring(saved.version)}>
                      Restore v{saved.version}…
                    </button>
                  ) : null}
                  {canEdit && restoring === saved.version ? (
                    <>
                      <button
                        type="button"
                        className="danger"
                        disabled={restore.isPending}
                        onClick={() => restore.mutate(saved.version)}
                      >
                        Replace the images with v{saved.version}
                      </button>{' '}
                      <button type="button" onClick={() => setRestoring(undefined)}>
                        Keep them
                      </button>
                    </>
                  ) : null}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {versions.length > 1 ? (
        <form
          className="toolbar"
          aria-label="Compare versions"
          onSubmit={(event) => {
            event.preventDefault();
            setCompared({ base, head });
          }}
        >
          <label htmlFor="compare-base">Compare</label>
          <select id="compare-base" value={base} onChange={(event) => setBase(Number(event.target.value))}>
            {versions.map((saved) => (
              <option key={saved.version} value={saved.version}>
                v{saved.version}
              </option>
            ))}
          </select>
          <label htmlFor="compare-head">with</label>
          <select id="compare-head" value={head} onChange={(event) => setHead(Number(event.target.value))}>
            {versions.map((saved) => (
              <option key={saved.version} value={saved.version}>
                v{saved.version}
              </option>
            ))}
          </select>
          <button type="submit">Compare</button>
        </form>
      ) : null}
      {compared ? <VersionCompare owner={owner} dataset={dataset} base={compared.base} head={compared.head} /> : null}
    </section>
  );
}
