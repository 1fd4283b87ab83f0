import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client.ts';
import { datasetPath, useNavigation } from '../app/router.tsx';

const TASKS = ['detect', 'segment', 'pose', 'obb', 'classify'] as const;

/** The URL name the API wants (lowercase words joined by hyphens), suggested from the display name. */
export function slugOf(name: string): string {
  return name
    .toLowerCase()
    .normalize('NFKD')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 128);
}

/** A new, empty dataset; the console then opens its page, where images are added. */
export function CreateDataset({ owner }: { owner: string }) {
  const [name, setName] = useState('');
  const [slug, setSlug] = useState<string | undefined>(undefined);
  const [task, setTask] = useState<(typeof TASKS)[number]>('detect');
  const [description, setDescription] = useState('');
  const queries = useQueryClient();
  const { navigate } = useNavigation();
  const dataset = slug ?? slugOf(name);
  const create = useMutation({
    mutationFn: async () =>
      unwrap(await api.POST('/api/datasets', { body: { name, dataset, task, description: description || undefined } })),
    onSuccess: async (created) => {
      await queries.invalidateQueries({ queryKey: ['datasets', owner] });
      navigate(datasetPath(created.owner, created.dataset));
    },
  });
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate();
  };
  return (
    <details className="card create-dataset">
      <summary>New dataset</summary>
      <form onSubmit={submit} aria-label="New dataset">
        <label htmlFor="new-dataset-name">Name</label>
        <input
          id="new-dataset-name"
          required
          maxLength={100}
          value={name}
          onChange={(event) => setName(event.target.value)}
        />
        <label htmlFor="new-dataset-slug">URL name</label>
        <input
          id="new-dataset-slug"
          required
          maxLength={128}
          pattern="[a-z0-9]+(-[a-z0-9]+)*"
          aria-describedby="new-dataset-slug-hint"
          value={dataset}
          onChange={(event) => setSlug(event.target.value)}
        />
        <small id="new-dataset-slug-hint" className="muted">
          Lowercase letters, digits and hyphens: /{owner}/datasets/{dataset || '…'}
        </small>
        <label htmlFor="new-dataset-task">Task</label>
        <select
          id="new-dataset-task"
          value={task}
          onChange={(event) => setTask(event.target.value as (typeof TASKS)[number])}
        >
          {TASKS.map((value) => (
            <option key={value}>{value}</option>
          ))}
        </select>
        <label htmlFor="new-dataset-description">Description (optional)</label>
        <input
          id="new-dataset-description"
          maxLength={1000}
          value={description}
          onChange={(event) => setDescription(event.target.value)}
        />
        <button type="submit" disabled={create.isPending}>
          Create dataset
        </button>
        {create.error ? <p role="alert">{create.error.message}</p> : null}
      </form>
    </details>
  );
}
