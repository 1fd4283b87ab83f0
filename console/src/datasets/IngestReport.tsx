/** What a completed ingest did: its counts, the reasons entries were skipped (with examples), and image problems. */
export function IngestReport({ result }: { result: Record<string, unknown> }) {
  const count = (name: string) => {
    const value = result[name];
    return typeof value === 'number' ? value : 0;
  };
  const reasons = Object.entries(isRecord(result.skippedReasons) ? result.skippedReasons : {});
  const examples = Array.isArray(result.skippedEntries) ? result.skippedEntries.filter(isSkipped) : [];
  const errors = Array.isArray(result.errors) ? result.errors.filter((entry) => typeof entry === 'string') : [];
  return (
    <div className="ingest-report" role="region" aria-label="Ingest result">
      <dl className="figures">
        <dt>Added</dt>
        <dd>{count('imagesAdded').toLocaleString()}</dd>
        <dt>Replaced</dt>
        <dd>{count('imagesReplaced').toLocaleString()}</dd>
        <dt>Already there (skipped)</dt>
        <dd>{count('imagesSkipped').toLocaleString()}</dd>
        <dt>Entries skipped</dt>
        <dd>{count('entriesSkipped').toLocaleString()}</dd>
        <dt>Images with errors</dt>
        <dd>{count('imagesWithErrors').toLocaleString()}</dd>
        <dt>Label errors</dt>
        <dd>{count('labelErrors').toLocaleString()}</dd>
      </dl>
      {reasons.length > 0 ? (
        <>
          <h3>Skipped, and why</h3>
          <ul aria-label="Skipped entries">
            {reasons.map(([reason, times]) => (
              <li key={reason}>
                {reason}: {String(times)}
                <ul>
                  {examples
                    .filter((entry) => entry.reason === reason)
                    .map((entry) => (
                      <li key={`${entry.path}${entry.at ?? ''}`}>
                        <code>{entry.path}</code>
                        {entry.at ? ` (${entry.at})` : ''}
                      </li>
                    ))}
                </ul>
              </li>
            ))}
          </ul>
        </>
      ) : null}
      {errors.length > 0 ? (
        <>
          <h3>Problems</h3>
          <ul aria-label="Ingest problems">
            {errors.map((error) => (
              <li key={error}>{error}</li>
            ))}
          </ul>
        </>
      ) : null}
    </div>
  );
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function isSkipped(value: unknown): value is { path: string; reason: string; at?: string } {
  return isRecord(value) && typeof value.path === 'string' && typeof value.reason === 'string';
}
