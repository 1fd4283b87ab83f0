import { useMemo, useState } from 'react';
import { Link, projectPath } from '../app/router.tsx';
import { useCanEdit } from '../auth/identity.ts';
import { CreateProject } from './CreateProject.tsx';
import { useProjects } from './queries.ts';

/** The workspace's projects, searchable, newest change first. */
export function ProjectsPage({ owner }: { owner: string }) {
  const projects = useProjects(owner);
  const canEdit = useCanEdit(owner);
  const [search, setSearch] = useState('');
  const shown = useMemo(() => {
    const needle = search.trim().toLowerCase();
    return (projects.data ?? [])
      .filter((item) => !needle || `${item.name} ${item.project} ${item.description}`.toLowerCase().includes(needle))
      .sort((a, b) => b.updatedAt.localeCompare(a.updatedAt));
  }, [projects.data, search]);
  return (
    <>
      <h1>Projects of {owner}</h1>
      {canEdit ? <CreateProject owner={owner} /> : null}
      <div className="toolbar" role="search">
        <label htmlFor="projects-search">Search projects</label>
        <input id="projects-search" type="search" value={search} onChange={(event) => setSearch(event.target.value)} />
      </div>
      {projects.isPending ? <p role="status">Loading projects…</p> : null}
      {projects.error ? <p role="alert">{projects.error.message}</p> : null}
      {projects.data && shown.length === 0 ? (
        <p role="status">{search ? 'No project matches the search.' : 'This workspace has no projects yet.'}</p>
      ) : null}
      <ul className="dataset-list" aria-label="Projects">
        {shown.map((item) => (
          <li key={item.id} className="card dataset-card">
            <h2>
              <Link href={projectPath(item.owner, item.project)}>{item.name}</Link>
            </h2>
            <p className="muted">{item.description || item.project}</p>
            <dl className="figures">
              <dt>Models</dt>
              <dd>{item.modelCount.toLocaleString()}</dd>
              <dt>Updated</dt>
              <dd>{new Date(item.updatedAt).toLocaleDateString()}</dd>
            </dl>
          </li>
        ))}
      </ul>
    </>
  );
}
