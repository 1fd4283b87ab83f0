import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useState, type FormEvent } from 'react';
import { api, unwrap } from '../api/client.ts';
import { NameFields } from '../app/NameFields.tsx';
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
        <NameFields
          id="new-dataset"
          name={name}
          onName={setName}
          slug={dataset}
          onSlug={setSlug}
          address={`/${owner}/datasets/${dataset || '…'}`}
        />
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
