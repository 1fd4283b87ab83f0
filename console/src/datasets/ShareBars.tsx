/** Shares of a whole as labelled horizontal bars; the numbers are in the text, the bars only repeat them. */
export function ShareBars({
  title,
  items,
}: {
  title: string;
  items: { name: string; value: number; color?: string }[];
}) {
  const total = items.reduce((sum, item) => sum + item.value, 0);
  const id = `share-${title.replace(/\W+/g, '-').toLowerCase()}`;
  return (
    <section className="card shares" aria-labelledby={id}>
      <h2 id={id}>{title}</h2>
      {total === 0 ? <p className="muted">None yet.</p> : null}
      <ul>
        {items.map((item) => {
          const percent = total ? (100 * item.value) / total : 0;
          return (
            <li key={item.name}>
              <span className="share-name">{item.name}</span>
              <span className="share-bar" aria-hidden="true">
                <span style={{ width: `${percent}%`, background: item.color ?? 'var(--accent)' }} />
              </span>
              <span className="share-value">
                {item.value.toLocaleString()} ({percent.toFixed(1)} %)
              </span>
            </li>
          );
        })}
      </ul>
    </section>
  );
}
