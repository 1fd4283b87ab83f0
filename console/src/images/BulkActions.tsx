import { useMutation } from '@tanstack/react-query';
import { useId, useState } from 'react';
import { api, unwrap } from '../api/client.ts';
import { useDatasets, useRefreshDataset } from '../datasets/queries.ts';
import type { Split } from './queries.ts';
import type { Selection } from './selection.ts';

/** The bulk API takes up to 1,000 images per request. */
const PER_REQUEST = 1000;

function chunks(ids: string[]): string[][] {
  return Array.from({ length: Math.ceil(ids.length / PER_REQUEST) }, (_, index) =>
    ids.slice(index * PER_REQUEST, (index + 1) * PER_REQUEST),
  );
}

/**
 * Moves the selected images to a split, copies them with their labels and splits into another dataset of the workspace
 * (the adopt API), or deletes them (after a second, explicit confirmation). A move or copy skips images whose file is
 * already in the target split and says how many.
 */
export function BulkActions({
  owner,
  dataset,
  classNames,
  selection,
}: {
  owner: string;
  dataset: string;
  /** This dataset's classes: a copy keeps each label's class by name, adding it to the destination where missing. */
  classNames: string[];
  selection: Selection;
}) {
  const [split, setSplit] = useState<Split>('train');
  const [confirming, setConfirming] = useState(false);
  // The gallery and the embedding map each hold one: their controls' ids must differ.
  const id = useId();
  const others = (useDatasets(owner).data ?? []).filter((item) => item.dataset !== dataset);
  const [copyTarget, setCopyTarget] = useState<string | undefined>(undefined);
  const destination = copyTarget ?? others[0]?.dataset;
  const [outcome, setOutcome] = useState('');
  const refresh = useRefreshDataset(owner);
  const move = useMutation({
    mutationFn: async () => {
      let moved = 0;
      let skipped = 0;
      for (const imageIds of chunks([...selection.ids])) {
        const answer = unwrap(
          await api.PATCH('/api/images/bulk', { body: { imageIds, split, conflictPolicy: 'skip' } }),
        );
        moved += answer.modifiedCount;
        skipped += answer.skippedCount;
      }
      return { moved, skipped };
    },
    onSuccess: async ({ moved, skipped }) => {
      setOutcome(
        `${moved.toLocaleString()} moved to ${split}` +
          (skipped ? `, ${skipped.toLocaleString()} skipped (the same file is already in ${split})` : ''),
      );
      selection.clear();
      await refresh(dataset);
    },
  });
  const copy = useMutation({
    mutationFn: async (target: string) => {
      let adopted = 0;
      let skipped = 0;
      for (const imageIds of chunks([...selection.ids])) {
        const answer = unwrap(
          await api.POST('/api/datasets/{owner}/{dataset}/images/adopt', {
            params: { path: { owner, dataset: target } },
            body: {
              imageIds,
              release: false,
              classMapping: Object.fromEntries(classNames.map((name) => [name, name])),
            },
          }),
        );
        adopted += answer.adopted;
        skipped += answer.skipped;
      }
      return { target, adopted, skipped };
    },
    onSuccess: async ({ target, adopted, skipped }) => {
      setOutcome(
        `${adopted.toLocaleString()} copied to ${target}` +
          (skipped ? `, ${skipped.toLocaleString()} already there` : ''),
      );
      selection.clear();
      await refresh(target);
    },
  });
  const remove = useMutation({
    mutationFn: async () => {
      let deleted = 0;
      for (const imageIds of chunks([...selection.ids]))
        deleted += unwrap(await api.DELETE('/api/images/bulk', { body: { imageIds } })).deletedCount;
      return deleted;
    },
    onSuccess: async (deleted) => {
      setOutcome(`${deleted.toLocaleString()} deleted`);
      setConfirming(false);
      selection.clear();
      await refresh(dataset);
    },
  });
  const count = selection.ids.size;
  const busy = move.isPending || remove.isPending || copy.isPending;
  const error = move.error ?? remove.error ?? copy.error;
  return (
    <div className="toolbar bulk-actions" role="group" aria-label="Selected images">
      <span>{count.toLocaleString()} selected</span>
      <label htmlFor={`${id}-split`}>Move to</label>
      <select id={`${id}-split`} value={split} onChange={(event) => setSplit(event.target.value as Split)}>
        <option value="train">train</option>
        <option value="val">val</option>
        <option value="test">test</option>
      </select>
      <button type="button" disabled={count === 0 || busy} onClick={() => move.mutate()}>
        Move
      </button>
      {others.length > 0 ? (
        <>
          <label htmlFor={`${id}-copy`}>Copy to</label>
          <select id={`${id}-copy`} value={destination} onChange={(event) => setCopyTarget(event.target.value)}>
            {others.map((item) => (
              <option key={item.id} value={item.dataset}>
                {item.name}
              </option>
            ))}
          </select>
          <button
            type="button"
            disabled={count === 0 || busy || !destination}
            onClick={() => destination && copy.mutate(destination)}
          >
            Copy
          </button>
        </>
      ) : null}
      {confirming ? (
        <>
          <button type="button" className="danger" disabled={busy} onClick={() => remove.mutate()}>
            Delete {count.toLocaleString()} permanently
          </button>
          <button type="button" onClick={() => setConfirming(false)}>
            Keep them
          </button>
        </>
      ) : (
        <button type="button" disabled={count === 0 || busy} onClick={() => setConfirming(true)}>
          Delete…
        </button>
      )}
      <button type="button" disabled={count === 0 || busy} onClick={selection.clear}>
        Clear selection
      </button>
      <span role="status">{error ? '' : outcome}</span>
      {error ? <span role="alert">{error.message}</span> : null}
    </div>
  );
}
