import { useState, type FormEvent } from 'react';
import { modelPath, useNavigation } from '../app/router.tsx';
import { slugOf } from '../datasets/CreateDataset.tsx';
import { useDatasets } from '../datasets/queries.ts';
import { useProject } from '../projects/queries.ts';
import { useCredits, useGpuAvailability, usePrices, useStartTraining } from './queries.ts';

/** Architectures trained from scratch (their .yaml): nothing is downloaded, as the appliance is offline. */
const ARCHITECTURES = ['yolo11n.yaml', 'yolo11s.yaml', 'yolo11m.yaml', 'yolo26n.yaml', 'yolo26s.yaml'];

const dollars = (cents: number) => `$${(cents / 100).toFixed(2)}`;

/**
 * A new training in this project: a dataset of the workspace, an architecture or one of the project's trained models
 * to start from, epochs, image size and a GPU type that a connected host has, with the estimate at list prices and the
 * workspace's credits before starting. Started, the console opens the model's page, where it runs.
 */
export function TrainForm({ owner, project }: { owner: string; project: string }) {
  const datasets = useDatasets(owner);
  const models = useProject(owner, project).data?.models ?? [];
  const gpus = useGpuAvailability();
  const prices = usePrices();
  const credits = useCredits();
  const start = useStartTraining(owner);
  const { navigate } = useNavigation();
  const [name, setName] = useState('');
  const [dataset, setDataset] = useState('');
  const [base, setBase] = useState(ARCHITECTURES[0]!);
  const [epochs, setEpochs] = useState(100);
  const [imgsz, setImgsz] = useState(640);
  const [gpuType, setGpuType] = useState('');
  const offered = gpus.data ?? [];
  const chosenGpu = gpuType || offered[0]?.[0] || '';
  const chosenDataset = dataset || datasets.data?.[0]?.dataset || '';
  const price = prices.data?.prices[chosenGpu];
  const estimateCents =
    price && prices.data ? Math.ceil((price.centsPerHour * epochs * prices.data.secondsPerEpochEstimate) / 3600) : null;
  const submit = (event: FormEvent) => {
    event.preventDefault();
    const model = slugOf(name);
    start.mutate(
      {
        project,
        model,
        name,
        trainArgs: { model: base, data: `ul://${owner}/datasets/${chosenDataset}`, epochs, imgsz },
        gpuType: chosenGpu,
      },
      { onSuccess: (started) => navigate(modelPath(owner, project, started.model)) },
    );
  };
  return (
    <details className="card create-dataset" open={models.length === 0}>
      <summary>Train a model</summary>
      <form onSubmit={submit} aria-label="Train a model">
        <label htmlFor="train-name">Model name</label>
        <input
          id="train-name"
          required
          maxLength={100}
          value={name}
          onChange={(event) => setName(event.target.value)}
        />
        <label htmlFor="train-dataset">Dataset</label>
        <select id="train-dataset" required value={chosenDataset} onChange={(event) => setDataset(event.target.value)}>
          {(datasets.data ?? []).map((item) => (
            <option key={item.id} value={item.dataset}>
              {item.name} ({item.task}, {item.imageCount.toLocaleString()} images)
            </option>
          ))}
        </select>
        <label htmlFor="train-base">Start from</label>
        <select id="train-base" value={base} onChange={(event) => setBase(event.target.value)}>
          <optgroup label="An architecture, from scratch">
            {ARCHITECTURES.map((architecture) => (
              <option key={architecture}>{architecture}</option>
            ))}
          </optgroup>
          <optgroup label="A trained model of this project">
            {models
              .filter((model) => model.hasWeights)
              .map((model) => (
                <option key={model.id} value={`ul://${owner}/${project}/${model.model}`}>
                  {model.name}
                </option>
              ))}
          </optgroup>
        </select>
        <label htmlFor="train-epochs">Epochs</label>
        <input
          id="train-epochs"
          type="number"
          required
          min={1}
          max={10000}
          value={epochs}
          onChange={(event) => setEpochs(Number(event.target.value))}
        />
        <label htmlFor="train-imgsz">Image size (pixels)</label>
        <input
          id="train-imgsz"
          type="number"
          required
          min={32}
          max={4096}
          step={32}
          value={imgsz}
          onChange={(event) => setImgsz(Number(event.target.value))}
        />
        <label htmlFor="train-gpu">GPU type</label>
        <select id="train-gpu" required value={chosenGpu} onChange={(event) => setGpuType(event.target.value)}>
          {offered.map(([type, level]) => (
            <option key={type} value={type}>
              {type === 'cpu' ? 'CPU (no GPU)' : type} — availability {level}
            </option>
          ))}
        </select>
        {gpus.data && offered.length === 0 ? (
          <p role="alert">No worker host is connected: connect one before training.</p>
        ) : null}
        <p role="status" className="muted">
          {estimateCents === null
            ? 'Estimating…'
            : `Estimate: about ${dollars(estimateCents)} (${dollars(price!.centsPerHour)} an hour, ${prices.data!.secondsPerEpochEstimate} s an epoch until this GPU type has measured runs).`}{' '}
          {credits.data === undefined ? '' : `Credits: ${dollars(credits.data)}.`}
        </p>
        <button type="submit" disabled={start.isPending || !chosenGpu || !chosenDataset}>
          Start training
        </button>
        {start.error ? <p role="alert">{start.error.message}</p> : null}
      </form>
    </details>
  );
}
