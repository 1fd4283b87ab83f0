import { useEndBatch, useStartBatch, type BatchStatus } from './batch-queries.ts';
import type { BlurSettings } from './FaceBlur.tsx';

type Run = NonNullable<BatchStatus['activeJob']> | NonNullable<BatchStatus['lastRun']>;

const what = (run: Run) =>
  run.operation === 'blur' ? (run.preview ? 'Face blur preview' : 'Face blur') : 'Auto-annotation';

/**
 * The dataset's batch run: the one under way with its progress and a cancel, or the last one's outcome (what it
 * changed, what it was charged), a face blur preview's images with apply and discard, and dismiss.
 */
export function BatchRun({
  owner,
  dataset,
  status,
  blur,
}: {
  owner: string;
  dataset: string;
  status: BatchStatus;
  /** The settings of the preview shown (an apply must repeat them); the run's own when the page was opened later. */
  blur?: BlurSettings;
}) {
  const end = useEndBatch(owner, dataset);
  const start = useStartBatch(owner, dataset);
  const active = status.activeJob;
  const last = status.lastRun;
  if (active)
    return (
      <section className="card" aria-labelledby="batch-heading">
        <h2 id="batch-heading">{what(active)} under way</h2>
        <div className="job-progress">
          <progress
            max={Math.max(1, active.progress.total)}
            value={active.progress.processed}
            aria-label={what(active)}
          />
          <span role="status">
            {active.stopping ? 'Stopping: ' : ''}
            {active.progress.processed.toLocaleString()} of {active.progress.total.toLocaleString()} images
          </span>
          <button type="button" disabled={active.stopping || end.isPending} onClick={() => end.mutate(undefined)}>
            Cancel
          </button>
        </div>
        {active.previews ? <Previews previews={active.previews} /> : null}
      </section>
    );
  if (!last) return null;
  const results = last.results;
  const pendingPreview = last.operation === 'blur' && last.preview && !last.failed && !last.stopped;
  const apply = () =>
    start.mutate({
      operation: 'blur',
      confidence: blur?.confidence ?? last.confidence,
      boxScale: blur?.boxScale ?? last.boxScale,
      ...(last.imageId && { imageId: last.imageId }),
      previewJobId: last.id,
    });
  return (
    <section className="card" aria-labelledby="batch-heading">
      <h2 id="batch-heading">
        {what(last)} {last.failed ? 'failed' : last.stopped ? 'cancelled' : 'finished'}
      </h2>
      {last.error ? <p role="alert">{last.error}</p> : null}
      {results ? (
        <dl className="figures" aria-label="What it did">
          <dt>Images processed</dt>
          <dd>
            {results.processed.toLocaleString()} of {results.total.toLocaleString()}
          </dd>
          {last.operation === 'blur' ? (
            <>
              <dt>Faces found</dt>
              <dd>{(results.faces ?? 0).toLocaleString()}</dd>
            </>
          ) : (
            <>
              <dt>Labels added</dt>
              <dd>{results.annotations.toLocaleString()}</dd>
              <dt>Classes among them</dt>
              <dd>{results.classes.toLocaleString()}</dd>
              <dt>Version saved first</dt>
              <dd>{last.datasetVersion === null ? '—' : `v${last.datasetVersion}`}</dd>
              <dt>Charged</dt>
              <dd>
                {results.chargedCents === null ? 'not yet settled' : `$${(results.chargedCents / 100).toFixed(2)}`}
              </dd>
            </>
          )}
        </dl>
      ) : null}
      {results?.previews ? <Previews previews={results.previews} /> : null}
      <div className="toolbar">
        {pendingPreview ? (
          <>
            <button type="button" disabled={start.isPending} onClick={apply}>
              Apply to the dataset
            </button>
            <button type="button" disabled={end.isPending} onClick={() => end.mutate(last.id)}>
              Discard the preview
            </button>
          </>
        ) : (
          <button type="button" disabled={end.isPending} onClick={() => end.mutate(undefined)}>
            Dismiss
          </button>
        )}
      </div>
      {start.error ? <p role="alert">{start.error.message}</p> : null}
      {end.error ? <p role="alert">{end.error.message}</p> : null}
    </section>
  );
}

type Preview = NonNullable<NonNullable<BatchStatus['lastRun']>['results']>['previews'];

/** The images a face blur preview blurred, each with the faces found in it. */
function Previews({ previews }: { previews: NonNullable<Preview> }) {
  return (
    <ul className="previews" aria-label="Preview">
      {previews.map((preview) => (
        <li key={preview.imageId}>
          <img src={preview.thumbnailUrl ?? preview.imageUrl} alt={`Image ${preview.imageId} as blurred`} />
          <span>
            {preview.faces} {preview.faces === 1 ? 'face' : 'faces'}
          </span>
        </li>
      ))}
    </ul>
  );
}
