import { useEffect, useRef, useState } from 'react';
import { useRefreshDataset } from '../datasets/queries.ts';
import { AutoAnnotate } from './AutoAnnotate.tsx';
import { BatchRun } from './BatchRun.tsx';
import { useBatchStatus } from './batch-queries.ts';
import { FaceBlur, type BlurSettings } from './FaceBlur.tsx';

/** The dataset's batch operations (one at a time): auto-annotation and face blurring, and the run under way or last. */
export function BatchPanel({ owner, dataset }: { owner: string; dataset: string }) {
  const status = useBatchStatus(owner, dataset);
  const [blur, setBlur] = useState<BlurSettings>();
  const busy = !!status.data?.activeJob;
  // A run that ended changed labels or images: the dataset's figures and gallery are read again.
  const refresh = useRefreshDataset(owner);
  const wasBusy = useRef(busy);
  useEffect(() => {
    if (wasBusy.current && !busy) void refresh(dataset);
    wasBusy.current = busy;
  }, [busy, refresh, dataset]);
  return (
    <>
      {status.error ? <p role="alert">{status.error.message}</p> : null}
      {status.data ? <BatchRun owner={owner} dataset={dataset} status={status.data} blur={blur} /> : null}
      <AutoAnnotate owner={owner} dataset={dataset} busy={busy} />
      <FaceBlur owner={owner} dataset={dataset} busy={busy} onPreview={setBlur} />
    </>
  );
}
