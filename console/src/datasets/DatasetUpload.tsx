import { useEffect, useRef, useState } from 'react';
import { api, unwrap } from '../api/client.ts';
import { DropZone } from '../app/DropZone.tsx';
import { JobProgress } from '../jobs/JobProgress.tsx';
import { isFinal, useJob } from '../jobs/queries.ts';
import { uploadFile } from '../uploads/upload-file.ts';
import { IngestReport } from './IngestReport.tsx';
import { useRefreshDataset } from './queries.ts';

type Step =
  | { step: 'idle' }
  | { step: 'uploading'; name: string; sent: number; total: number }
  | { step: 'ingesting'; jobId: string }
  | { step: 'failed'; message: string };

const ACCEPT = '.zip,.tar,.tar.gz,.tgz,.ndjson';

/**
 * Adds images from an archive (ZIP, TAR, TAR.GZ or NDJSON), dropped here or chosen: the upload's progress, then the
 * ingest job's, then what it added and what it skipped and why. The dataset's figures refresh when the job ends.
 */
export function DatasetUpload({ owner, dataset, datasetId }: { owner: string; dataset: string; datasetId: string }) {
  const [state, setState] = useState<Step>({ step: 'idle' });
  const abort = useRef<AbortController | undefined>(undefined);
  const refresh = useRefreshDataset(owner);
  const job = useJob(state.step === 'ingesting' ? state.jobId : undefined);
  const ended = job.data && isFinal(job.data.status);

  useEffect(() => {
    if (!ended) return;
    void refresh(dataset);
  }, [ended, refresh, dataset]);

  async function start(file: File) {
    abort.current = new AbortController();
    setState({ step: 'uploading', name: file.name, sent: 0, total: file.size });
    try {
      const sessionId = await uploadFile(
        file,
        { assetType: 'datasets', assetId: datasetId },
        (sent, total) => setState({ step: 'uploading', name: file.name, sent, total }),
        abort.current.signal,
      );
      const started = unwrap(
        await api.POST('/api/datasets/{owner}/{dataset}/ingest', {
          params: { path: { owner, dataset } },
          body: { sessionId },
        }),
      );
      setState({ step: 'ingesting', jobId: started.jobId });
    } catch (error) {
      setState({ step: 'failed', message: error instanceof Error ? error.message : String(error) });
    }
  }

  const busy = state.step === 'uploading' || (state.step === 'ingesting' && !ended);
  return (
    <section className="card upload" aria-labelledby="upload-heading">
      <h2 id="upload-heading">Add images</h2>
      <DropZone
        id="upload-file"
        accept={ACCEPT}
        disabled={busy}
        choose="Choose a file…"
        onFile={(file) => {
          if (state.step !== 'uploading') void start(file);
        }}
      >
        Drop a ZIP, TAR, TAR.GZ or NDJSON file here (YOLO, COCO, classify folders or plain images), or
      </DropZone>
      {state.step === 'uploading' ? (
        <div className="job-progress">
          <progress max={state.total} value={state.sent} aria-label={`Uploading ${state.name}`} />
          <span role="status">
            Uploading {state.name}: {megabytes(state.sent)} of {megabytes(state.total)} MB
          </span>
          <button type="button" onClick={() => abort.current?.abort()}>
            Cancel upload
          </button>
        </div>
      ) : null}
      {state.step === 'ingesting' && job.data ? (
        <>
          <JobProgress job={job.data} label="Ingest" />
          {job.data.status === 'failed' ? <p role="alert">The ingest failed: {job.data.error}</p> : null}
          {job.data.status === 'completed' && job.data.result ? <IngestReport result={job.data.result} /> : null}
        </>
      ) : null}
      {state.step === 'ingesting' && job.error ? <p role="alert">{job.error.message}</p> : null}
      {state.step === 'failed' ? <p role="alert">{state.message}</p> : null}
    </section>
  );
}

function megabytes(bytes: number): string {
  return (bytes / 1e6).toFixed(1);
}
