// The trainer reports metrics under ultralytics' own keys ("metrics/mAP50(B)"); the model shows the four the spec names.

const NUMBER = (value: unknown): number | undefined =>
  typeof value === 'number' && Number.isFinite(value) ? value : undefined;

/** mAP50, mAP50-95, precision and recall from box metrics (B), else mask (M), pose (P) or classification ones. */
export function headlineMetrics(metrics: Record<string, unknown>): Record<string, number> | null {
  const pick = (name: string) =>
    ['B', 'M', 'P', 'OBB']
      .map((suffix) => NUMBER(metrics[`metrics/${name}(${suffix})`]))
      .find((value) => value !== undefined);
  const headline: Record<string, number> = {};
  const entries: Array<[string, number | undefined]> = [
    ['mAP50', pick('mAP50')],
    ['mAP50-95', pick('mAP50-95')],
    ['precision', pick('precision')],
    ['recall', pick('recall')],
    ['top1', NUMBER(metrics['metrics/accuracy_top1'])],
    ['top5', NUMBER(metrics['metrics/accuracy_top5'])],
  ];
  for (const [name, value] of entries) if (value !== undefined) headline[name] = Math.round(value * 1e5) / 1e5;
  return Object.keys(headline).length > 0 ? headline : null;
}

export const numberOrNull = (value: unknown): number | null => NUMBER(value) ?? null;
