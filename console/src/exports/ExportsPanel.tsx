import { useState, type FormEvent } from 'react';
import { useGpuAvailability } from '../training/queries.ts';
import { useExportCapabilities, useExports, useStartExport, type ExportFormat } from './queries.ts';

/** Every format the API takes, in the order of its table; engine is TensorRT (a GPU host's). */
const FORMATS: ExportFormat[] = [
  'onnx',
  'torchscript',
  'openvino',
  'engine',
  'coreml',
  'saved_model',
  'pb',
  'litert',
  'edgetpu',
  'paddle',
  'mnn',
  'ncnn',
  'imx',
  'rknn',
  'executorch',
  'axelera',
  'deepx',
  'qnn',
  'hailo',
  'ascend',
  'xilinx',
  'coreai',
];

/**
 * The model's exports: a new one in any format the connected hosts can make (the others listed as unavailable, with
 * the host's reason), each with its status as it moves and, once made, its file to download.
 */
export function ExportsPanel(props: { owner: string; project: string; model: string; canEdit: boolean }) {
  const { owner, project, model, canEdit } = props;
  const exports = useExports(owner, project, model);
  const capabilities = useExportCapabilities();
  const gpus = useGpuAvailability();
  const start = useStartExport(owner, project, model);
  const known = capabilities.data;
  const available = FORMATS.filter((format) => !known || known.formats.has(format));
  const [format, setFormat] = useState<ExportFormat | ''>('');
  const chosen = format || available[0] || '';
  const gpuTypes = (gpus.data ?? []).map(([type]) => type).filter((type) => type !== 'cpu');
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (!chosen) return;
    start.mutate({ format: chosen, ...(chosen === 'engine' && { gpuType: gpuTypes[0] }) });
  };
  return (
    <section className="card" aria-labelledby="exports-heading">
      <h2 id="exports-heading">Exports</h2>
      {canEdit ? (
        <form onSubmit={submit} aria-label="New export" className="toolbar">
          <label htmlFor="export-format">Format</label>
          <select id="export-format" value={chosen} onChange={(event) => setFormat(event.target.value as ExportFormat)}>
            {available.map((value) => (
              <option key={value} value={value} disabled={value === 'engine' && gpuTypes.length === 0}>
                {value}
              </option>
            ))}
          </select>
          <button type="submit" disabled={start.isPending || !chosen}>
            Export
          </button>
          {start.error ? <p role="alert">{start.error.message}</p> : null}
        </form>
      ) : null}
      {known && known.connected === 0 ? <p role="status">No worker host is connected: exports wait for one.</p> : null}
      {known && known.connected > 0 && known.formats.size === 0 ? (
        <p role="status">The connected hosts have not reported what they can export to yet.</p>
      ) : null}
      {known && known.missing.size > 0 ? (
        <details>
          <summary>Formats no connected host can make ({known.missing.size})</summary>
          <ul aria-label="Unavailable formats">
            {[...known.missing].map(([name, why]) => (
              <li key={name}>
                <strong>{name}</strong>: {why}
              </li>
            ))}
          </ul>
        </details>
      ) : null}
      {exports.error ? <p role="alert">{exports.error.message}</p> : null}
      {exports.data && exports.data.length > 0 ? (
        <table className="models" aria-label="Exports">
          <thead>
            <tr>
              <th scope="col">Format</th>
              <th scope="col">Status</th>
              <th scope="col">Created</th>
              <th scope="col">File</th>
            </tr>
          </thead>
          <tbody>
            {exports.data.map((item) => (
              <tr key={item.id}>
                <th scope="row">{item.format}</th>
                <td>{item.error ? `${item.status}: ${item.error.message}` : item.status}</td>
                <td>{new Date(item.createdAt).toLocaleString()}</td>
                <td>
                  {item.file ? (
                    <a href={item.file.downloadUrl} download={item.file.downloadFilename}>
                      {item.file.downloadFilename} ({(item.file.size / 1e6).toFixed(1)} MB)
                    </a>
                  ) : (
                    '—'
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      ) : null}
    </section>
  );
}
