import { MetricChart, type Series } from '../training/MetricChart.tsx';

/** A plot as the trainer reports it with the training's end (ultralytics' on_plot data). */
interface Plot {
  type: string;
  matrix?: number[][];
  x?: number[];
  y?: number[] | number[][];
  ap?: number[];
  classes?: string[];
}

const CURVES: Record<string, { title: string; x: string }> = {
  pr_curve: { title: 'Precision against recall', x: 'recall' },
  f1_curve: { title: 'F1 against confidence', x: 'confidence' },
  p_curve: { title: 'Precision against confidence', x: 'confidence' },
  r_curve: { title: 'Recall against confidence', x: 'confidence' },
};

const isPlot = (value: unknown): value is Plot =>
  !!value && typeof value === 'object' && typeof (value as Plot).type === 'string';

/** One series a class (a curve per class when y has rows), plus their mean. */
function curveSeries(plot: Plot, classNames: string[]): Series[] {
  const rows = Array.isArray(plot.y?.[0]) ? (plot.y as number[][]) : [plot.y as number[]];
  const names = plot.classes ?? classNames;
  const mean = (plot.x ?? []).map((_, index) => rows.reduce((sum, row) => sum + (row[index] ?? 0), 0) / rows.length);
  const perClass =
    rows.length > 1 ? rows.map((row, index) => ({ label: names[index] ?? `class ${index}`, values: row })) : [];
  return [{ label: rows.length > 1 ? 'all classes' : 'curve', values: mean }, ...perClass];
}

/**
 * What the training's validation reported at its end: the confusion matrix (rows predicted, columns true, with
 * background) and the PR, F1, precision and recall curves per class.
 */
export function ValidationPlots({ plots, classNames }: { plots: unknown[]; classNames: string[] }) {
  const known = plots.filter(isPlot);
  const matrix = known.find((plot) => plot.type === 'confusion_matrix')?.matrix;
  const curves = known.filter((plot) => CURVES[plot.type] && plot.x && plot.y);
  if (!matrix && curves.length === 0) return null;
  return (
    <section className="card" aria-labelledby="validation-heading">
      <h2 id="validation-heading">Validation</h2>
      {matrix ? <ConfusionMatrix matrix={matrix} classNames={classNames} /> : null}
      <div className="charts">
        {curves.map((plot) => (
          <MetricChart
            key={plot.type}
            title={CURVES[plot.type]!.title}
            unit={CURVES[plot.type]!.x}
            x={plot.x!}
            series={curveSeries(plot, classNames)}
          />
        ))}
      </div>
    </section>
  );
}

function ConfusionMatrix({ matrix, classNames }: { matrix: number[][]; classNames: string[] }) {
  const labels = matrix.map(
    (_, index) => classNames[index] ?? (index === matrix.length - 1 ? 'background' : `class ${index}`),
  );
  const largest = Math.max(1, ...matrix.flat());
  return (
    <div className="scroll-x">
      <table className="confusion" aria-label="Confusion matrix: rows predicted, columns true">
        <thead>
          <tr>
            <th scope="col">Predicted \ true</th>
            {labels.map((label) => (
              <th scope="col" key={label}>
                {label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>
          {matrix.map((row, predicted) => (
            <tr key={labels[predicted]}>
              <th scope="row">{labels[predicted]}</th>
              {row.map((count, truth) => {
                // The text reads on every shade (over 4.5:1 at the darkest).
                const share = count / largest;
                return (
                  <td key={labels[truth]} style={{ background: `rgba(0, 114, 178, ${(share * 0.6).toFixed(3)})` }}>
                    {Number(count.toPrecision(4))}
                  </td>
                );
              })}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
