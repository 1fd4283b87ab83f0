import { useProject, useProjects } from '../projects/queries.ts';

/** A trained model of the workspace, chosen by project then model (only models with weights are offered). */
export function ModelPicker({
  owner,
  idPrefix,
  project,
  model,
  onProject,
  onModel,
}: {
  owner: string;
  idPrefix: string;
  project: string;
  model: string;
  onProject: (project: string) => void;
  onModel: (model: string) => void;
}) {
  const projects = useProjects(owner);
  const models = useProject(owner, project || '-');
  const trained = project ? (models.data?.models ?? []).filter((item) => item.hasWeights) : [];
  return (
    <>
      <label htmlFor={`${idPrefix}-project`}>Project</label>
      <select
        id={`${idPrefix}-project`}
        required
        value={project}
        onChange={(event) => {
          onProject(event.target.value);
          onModel('');
        }}
      >
        <option value="">Choose a project</option>
        {(projects.data ?? []).map((item) => (
          <option key={item.project} value={item.project}>
            {item.name}
          </option>
        ))}
      </select>
      <label htmlFor={`${idPrefix}-model`}>Model</label>
      <select id={`${idPrefix}-model`} required value={model} onChange={(event) => onModel(event.target.value)}>
        <option value="">{project ? 'Choose a trained model' : 'Choose a project first'}</option>
        {trained.map((item) => (
          <option key={item.model} value={item.model}>
            {item.name}
          </option>
        ))}
      </select>
    </>
  );
}
