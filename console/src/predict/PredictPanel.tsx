import { useEffect, useId, useState } from 'react';
import { DropZone } from '../app/DropZone.tsx';
import { NumberField } from '../app/NumberField.tsx';
import { PredictionView } from './PredictionView.tsx';
import { usePrediction, type PredictTarget } from './queries.ts';

const ACCEPT = 'image/jpeg,image/png,image/webp,image/bmp,image/tiff';

/** A value that follows `value` once it has stopped changing for `ms` (a slider dragged runs the model once). */
function useSettled<T>(value: T, ms: number): T {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(timer);
  }, [value, ms]);
  return settled;
}

/**
 * Try a model or a deployment on an image: drop or choose one, see what it finds drawn over it, and move the confidence
 * and IoU thresholds to run it again.
 */
export function PredictPanel({ target, title }: { target: PredictTarget; title: string }) {
  const id = useId();
  const [file, setFile] = useState<File>();
  const [src, setSrc] = useState<string>();
  const [conf, setConf] = useState(0.25);
  const [iou, setIou] = useState(0.7);
  const settings = useSettled({ conf, iou }, 250);
  const prediction = usePrediction(target, file, settings);
  useEffect(() => {
    if (!file) return;
    const url = URL.createObjectURL(file);
    setSrc(url);
    return () => URL.revokeObjectURL(url);
  }, [file]);
  const image = prediction.data?.images[0];
  return (
    <section className="card predict" aria-labelledby={`${id}-heading`}>
      <h2 id={`${id}-heading`}>{title}</h2>
      <DropZone id={`${id}-file`} accept={ACCEPT} choose="Choose an image…" onFile={setFile}>
        Drop an image here (JPEG, PNG, WebP, BMP or TIFF), or
      </DropZone>
      <div className="toolbar">
        <NumberField
          slider
          id={`${id}-conf`}
          label="Confidence"
          min={0.01}
          max={1}
          step={0.01}
          value={conf}
          onChange={setConf}
        />
        <NumberField slider id={`${id}-iou`} label="IoU" min={0} max={0.95} step={0.05} value={iou} onChange={setIou} />
      </div>
      {prediction.error ? <p role="alert">{prediction.error.message}</p> : null}
      <p role="status" aria-live="polite">
        {!file
          ? 'No image yet.'
          : prediction.isFetching
            ? `Running on ${file.name}…`
            : image
              ? `${image.results.length} found in ${file.name} at confidence ${settings.conf.toFixed(2)} and IoU ${settings.iou.toFixed(2)} (${Math.round(image.speed.preprocess + image.speed.inference + image.speed.postprocess)} ms)`
              : ''}
      </p>
      {image && src ? <PredictionView src={src} image={image} /> : null}
    </section>
  );
}
