import { useState, type FormEvent } from 'react';
import { NumberField } from '../app/NumberField.tsx';
import { useStartBatch } from './batch-queries.ts';

export interface BlurSettings {
  confidence: number;
  boxScale: number;
}

/** Blur the faces in the dataset's images: first a preview of six images, then applied as it showed (BatchRun). */
export function FaceBlur({
  owner,
  dataset,
  busy,
  onPreview,
}: {
  owner: string;
  dataset: string;
  busy: boolean;
  onPreview: (settings: BlurSettings) => void;
}) {
  const [confidence, setConfidence] = useState(0.25);
  const [boxScale, setBoxScale] = useState(1);
  const start = useStartBatch(owner, dataset);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    start.mutate(
      { operation: 'blur', confidence, boxScale, preview: true },
      { onSuccess: () => onPreview({ confidence, boxScale }) },
    );
  };
  return (
    <details className="card create-dataset" open>
      <summary>Blur faces</summary>
      <form onSubmit={submit} aria-label="Blur faces">
        <NumberField
          id="blur-confidence"
          label="Minimum face score"
          min={0.01}
          max={1}
          step={0.01}
          value={confidence}
          onChange={setConfidence}
        />
        <NumberField
          id="blur-scale"
          label="Box scale"
          min={0.5}
          max={1.5}
          step={0.05}
          value={boxScale}
          onChange={setBoxScale}
        />
        <small>
          A preview blurs up to six images without changing any; you then apply it to the dataset or discard it.
        </small>
        <button type="submit" disabled={busy || start.isPending}>
          Preview the blur
        </button>
        {start.error ? <p role="alert">{start.error.message}</p> : null}
      </form>
    </details>
  );
}
