/**
 * A grid of counts (bins[row][column]) drawn as shaded cells, darker for more; the busiest cell and the total are in
 * the text, and each cell's count in its tooltip.
 */
export function Heatmap({
  title,
  bins,
  maxCount,
  rowAxis,
  columnAxis,
  cellName,
}: {
  title: string;
  bins: number[][];
  maxCount: number;
  rowAxis: string;
  columnAxis: string;
  cellName: (row: number, column: number) => string;
}) {
  const id = `heatmap-${title.replace(/\W+/g, '-').toLowerCase()}`;
  const rows = bins.length;
  const columns = bins[0]?.length ?? 0;
  const total = bins.flat().reduce((sum, count) => sum + count, 0);
  const busiest = busiestCell(bins);
  const size = 10;
  return (
    <section className="card heatmap" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {total === 0 ? (
        <p className="muted">None yet.</p>
      ) : (
        <>
          <svg
            viewBox={`0 0 ${columns * size} ${rows * size}`}
            role="img"
            aria-label={`${title}: ${total.toLocaleString()} in all, most (${maxCount.toLocaleString()}) at ${cellName(busiest.row, busiest.column)}`}
          >
            {bins.flatMap((cells, row) =>
              cells.map((count, column) => (
                <rect
                  key={`${row}-${column}`}
                  x={column * size}
                  y={row * size}
                  width={size}
                  height={size}
                  fill="var(--accent)"
                  fillOpacity={count === 0 ? 0.03 : 0.15 + (0.85 * count) / Math.max(maxCount, 1)}
                >
                  <title>{`${cellName(row, column)}: ${count.toLocaleString()}`}</title>
                </rect>
              )),
            )}
          </svg>
          <p className="muted">
            Rows: {rowAxis}; columns: {columnAxis}. Most: {maxCount.toLocaleString()} at{' '}
            {cellName(busiest.row, busiest.column)}.
          </p>
        </>
      )}
    </section>
  );
}

function busiestCell(bins: number[][]): { row: number; column: number } {
  let best = { row: 0, column: 0, count: -1 };
  bins.forEach((cells, row) =>
    cells.forEach((count, column) => {
      if (count > best.count) best = { row, column, count };
    }),
  );
  return best;
}
