import { useState, type FormEvent } from 'react';
import { NumberField } from '../app/NumberField.tsx';
import { ModelPicker } from '../models/ModelPicker.tsx';
import { useStartBatch } from './batch-queries.ts';

/**
 * Label the dataset's unlabeled images (or every image) with a trained model's predictions, as the spec's batch
 * auto-annotation does: a version is saved first, existing labels are never changed.
 */
export function AutoAnnotate({ owner, dataset, busy }: { owner: string; dataset: string; busy: boolean }) {
  const [project, setProject] = useState('');
  const [model, setModel] = useState('');
  const [confidence, setConfidence] = useState(0.25);
  const [iou, setIou] = useState(0.7);
  const [includeAnnotated, setIncludeAnnotated] = useState(false);
  const start = useStartBatch(owner, dataset);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    start.mutate({ modelId: `ul://${owner}/${project}/${model}`, confidence, iou, includeAnnotated });
  };
  return (
    <details className="card create-dataset" open>
      <summary>Auto-annotate with a model</summary>
      <form onSubmit={submit} aria-label="Auto-annotate">
        <ModelPicker
          owner={owner}
          idPrefix="annotate"
          project={project}
          model={model}
          onProject={setProject}
          onModel={setModel}
        />
        <NumberField
          id="annotate-confidence"
          label="Minimum confidence"
          min={0.01}
          max={1}
          step={0.01}
          value={confidence}
          onChange={setConfidence}
        />
        <NumberField id="annotate-iou" label="IoU" min={0} max={0.95} step={0.05} value={iou} onChange={setIou} />
        <label htmlFor="annotate-all">Images that have labels too</label>
        <input
          id="annotate-all"
          type="checkbox"
          checked={includeAnnotated}
          onChange={(event) => setIncludeAnnotated(event.target.checked)}
        />
        <small>A version of the dataset is saved first; labels it has are kept as they are.</small>
        <button type="submit" disabled={busy || start.isPending}>
          Auto-annotate
        </button>
        {start.error ? <p role="alert">{start.error.message}</p> : null}
      </form>
    </details>
  );
}
