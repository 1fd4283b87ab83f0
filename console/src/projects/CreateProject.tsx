import { useState, type FormEvent } from 'react';
import { NameFields } from '../app/NameFields.tsx';
import { projectPath, useNavigation } from '../app/router.tsx';
import { slugOf } from '../datasets/CreateDataset.tsx';
import { useCreateProject } from './queries.ts';

/** A new, empty project; the console then opens its page, where models are trained. */
export function CreateProject({ owner }: { owner: string }) {
  const [name, setName] = useState('');
  const [slug, setSlug] = useState<string | undefined>(undefined);
  const [description, setDescription] = useState('');
  const { navigate } = useNavigation();
  const create = useCreateProject(owner);
  const project = slug ?? slugOf(name);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    create.mutate(
      { project, name, description: description || undefined },
      { onSuccess: (created) => navigate(projectPath(created.owner, created.project)) },
    );
  };
  return (
    <details className="card create-dataset">
      <summary>New project</summary>
      <form onSubmit={submit} aria-label="New project">
        <NameFields
          id="new-project"
          name={name}
          onName={setName}
          slug={project}
          onSlug={setSlug}
          address={`/${owner}/${project || '…'}`}
        />
        <label htmlFor="new-project-description">Description (optional)</label>
        <input
          id="new-project-description"
          maxLength={1000}
          value={description}
          onChange={(event) => setDescription(event.target.value)}
        />
        <button type="submit" disabled={create.isPending}>
          Create project
        </button>
        {create.error ? <p role="alert">{create.error.message}</p> : null}
      </form>
    </details>
  );
}
