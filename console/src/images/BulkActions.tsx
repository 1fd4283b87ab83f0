import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState } from 'react';
import { api, unwrap } from '../api/client.ts';
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
 * Moves the selected images to a split or deletes them (after a second, explicit confirmation). A move skips images
 * whose file is already in the target split (the API's conflict policy "skip") and says how many.
 */
export function BulkActions({ owner, dataset, selection }: { owner: string; dataset: string; selection: Selection }) {
  const [split, setSplit] = useState<Split>('train');
  const [confirming, setConfirming] = useState(false);
  const [outcome, setOutcome] = useState('');
  const queries = useQueryClient();
  const refresh = async () => {
    for (const queryKey of [
      ['dataset', owner, dataset],
      ['class-stats', owner, dataset],
      ['images', owner, dataset],
    ])
      await queries.invalidateQueries({ queryKey });
  };
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
      await refresh();
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
      await refresh();
    },
  });
  const count = selection.ids.size;
  const busy = move.isPending || remove.isPending;
  const error = move.error ?? remove.error;
  return (
    <div className="toolbar bulk-actions" role="group" aria-label="Selected images">
      <span>{count.toLocaleString()} selected</span>
      <label htmlFor="bulk-split">Move to</label>
      <select id="bulk-split" value={split} onChange={(event) => setSplit(event.target.value as Split)}>
        <option value="train">train</option>
        <option value="val">val</option>
        <option value="test">test</option>
      </select>
      <button type="button" disabled={count === 0 || busy} onClick={() => move.mutate()}>
        Move
      </button>
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
