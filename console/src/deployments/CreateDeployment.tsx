import { useState, type FormEvent } from 'react';
import { useHosts } from '../hosts/queries.ts';
import { ModelPicker } from '../models/ModelPicker.tsx';
import { useCreateDeployment, type DeploymentCreate } from './queries.ts';

const CPUS = [1, 2, 4, 6, 8] as const;
const MEMORIES = [2, 4, 8, 16, 24, 32] as const;

/** A URL name from a display name, as the API's slugs are (lower-case words joined by hyphens). */
const slugOf = (name: string) =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 63);

/**
 * Deploy a trained model: which model, its name, the region and the size (1 CPU and 2 GiB scales to zero when idle and
 * is not metered). The regions offered are those the connected hosts serve; the API checks the rest.
 */
export function CreateDeployment({
  owner,
  open,
  onCreated,
}: {
  owner: string;
  open: boolean;
  onCreated: (apiKey: string, slug: string) => void;
}) {
  const [project, setProject] = useState('');
  const [model, setModel] = useState('');
  const [name, setName] = useState('');
  const [region, setRegion] = useState('us-central1');
  const [cpu, setCpu] = useState<(typeof CPUS)[number]>(1);
  const [memoryGi, setMemoryGi] = useState<(typeof MEMORIES)[number]>(2);
  const hosts = useHosts();
  const regions = [...new Set((hosts.data ?? []).flatMap((host) => (host.region ? [host.region] : [])))];
  const create = useCreateDeployment(owner);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    // The API checks the region (one of its 42) and says which it takes.
    const body: DeploymentCreate = {
      project,
      model,
      deployment: slugOf(name),
      name,
      region: region as DeploymentCreate['region'],
      cpu,
      memoryGi,
    };
    create.mutate(body, { onSuccess: (created) => onCreated(created.apiKey, created.deployment) });
  };
  return (
    <details className="card create-dataset" open={open}>
      <summary>Deploy a model</summary>
      <form onSubmit={submit} aria-label="Deploy a model">
        <ModelPicker
          owner={owner}
          idPrefix="deploy"
          project={project}
          model={model}
          onProject={setProject}
          onModel={setModel}
        />
        <label htmlFor="deploy-name">Name</label>
        <input
          id="deploy-name"
          required
          maxLength={128}
          value={name}
          onChange={(event) => setName(event.target.value)}
        />
        <label htmlFor="deploy-region">Region</label>
        <input
          id="deploy-region"
          required
          list="deploy-regions"
          value={region}
          onChange={(event) => setRegion(event.target.value)}
        />
        <datalist id="deploy-regions">
          {regions.map((item) => (
            <option key={item} value={item} />
          ))}
        </datalist>
        <label htmlFor="deploy-cpu">CPUs</label>
        <select id="deploy-cpu" value={cpu} onChange={(event) => setCpu(Number(event.target.value) as typeof cpu)}>
          {CPUS.map((value) => (
            <option key={value} value={value}>
              {value}
            </option>
          ))}
        </select>
        <label htmlFor="deploy-memory">Memory (GiB)</label>
        <select
          id="deploy-memory"
          value={memoryGi}
          onChange={(event) => setMemoryGi(Number(event.target.value) as typeof memoryGi)}
        >
          {MEMORIES.map((value) => (
            <option key={value} value={value}>
              {value}
            </option>
          ))}
        </select>
        <small>
          {cpu === 1 && memoryGi === 2
            ? 'The default size: it scales to zero when idle and is not metered.'
            : 'A custom size: it keeps one server running and is metered.'}
        </small>
        <button type="submit" disabled={create.isPending}>
          Deploy
        </button>
        {create.error ? <p role="alert">{create.error.message}</p> : null}
      </form>
    </details>
  );
}
