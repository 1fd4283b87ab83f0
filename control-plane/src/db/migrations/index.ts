import { Migration20261122000000_foundation } from './Migration20261122000000_foundation.ts';
import { Migration20261122204806_uploads } from './Migration20261122204806_uploads.ts';
import { Migration20261122221348_datasets_images } from './Migration20261122221348_datasets_images.ts';
import { Migration20261122223030_jobs_versions } from './Migration20261122223030_jobs_versions.ts';
import { Migration20261122232242_projects_models_workflows } from './Migration20261122232242_projects_models_workflows.ts';
import { Migration20261122235521_hosts_worker_keys } from './Migration20261122235521_hosts_worker_keys.ts';
import { Migration20261123004101_host_jobs } from './Migration20261123004101_host_jobs.ts';
import { Migration20261123005518_credits } from './Migration20261123005518_credits.ts';
import { Migration20261123010011_training_runs_job_keys } from './Migration20261123010011_training_runs_job_keys.ts';
import { Migration20261123013707_host_job_accounting } from './Migration20261123013707_host_job_accounting.ts';
import { Migration20261124004210_resource_counts } from './Migration20261124004210_resource_counts.ts';
import { Migration20261124011321_rate_limit_take_count } from './Migration20261124011321_rate_limit_take_count.ts';
import { Migration20261124030000_job_lifecycle } from './Migration20261124030000_job_lifecycle.ts';
import { Migration20261124040000_host_sessions } from './Migration20261124040000_host_sessions.ts';
import { Migration20261124050000_training_run_last_report } from './Migration20261124050000_training_run_last_report.ts';
import { Migration20261124060000_user_follows } from './Migration20261124060000_user_follows.ts';
import { Migration20261124070000_model_train_results } from './Migration20261124070000_model_train_results.ts';
import { Migration20261124090000_job_outputs_exporters } from './Migration20261124090000_job_outputs_exporters.ts';
import { Migration20261124110000_model_exports } from './Migration20261124110000_model_exports.ts';
import { Migration20261125000000_deployments } from './Migration20261125000000_deployments.ts';
import { Migration20261126000000_deployment_cameras } from './Migration20261126000000_deployment_cameras.ts';
import { Migration20261127000000_control_plane_replicas } from './Migration20261127000000_control_plane_replicas.ts';
import { Migration20261128000000_host_agent_version } from './Migration20261128000000_host_agent_version.ts';
import { Migration20261129000000_image_faces_blurred } from './Migration20261129000000_image_faces_blurred.ts';
import { Migration20261129100000_image_embeddings } from './Migration20261129100000_image_embeddings.ts';
import { Migration20261129200000_dataset_layouts } from './Migration20261129200000_dataset_layouts.ts';
import { Migration20261129300000_image_embedding_seq } from './Migration20261129300000_image_embedding_seq.ts';
import { Migration20261201000000_connected_datasets } from './Migration20261201000000_connected_datasets.ts';
import { Migration20261202000000_storage_providers } from './Migration20261202000000_storage_providers.ts';
import { Migration20261130000000_storage_integrations } from './Migration20261130000000_storage_integrations.ts';
import { Migration20261203000000_staged_reference_version } from './Migration20261203000000_staged_reference_version.ts';
import { Migration20261204000000_local_integrations } from './Migration20261204000000_local_integrations.ts';
import { Migration20261205000000_deployment_tokens_sealed } from './Migration20261205000000_deployment_tokens_sealed.ts';
import { Migration20261206000000_job_lost_attempt_seconds } from './Migration20261206000000_job_lost_attempt_seconds.ts';
import { Migration20261207000000_console_sessions } from './Migration20261207000000_console_sessions.ts';
import { Migration20261208000000_layout_point_ordinals } from './Migration20261208000000_layout_point_ordinals.ts';
import { Migration20261209000000_host_load } from './Migration20261209000000_host_load.ts';
import { Migration20261209100000_backup_runs } from './Migration20261209100000_backup_runs.ts';
import { Migration20261209200000_audit_entries } from './Migration20261209200000_audit_entries.ts';
import { Migration20261210000000_jobs_queue_order } from './Migration20261210000000_jobs_queue_order.ts';

/** Checked-in migrations in order; `npm run migration:create` appends to this list. */
export const migrations = [
  { name: 'Migration20261122000000_foundation', class: Migration20261122000000_foundation },
  { name: 'Migration20261122204806_uploads', class: Migration20261122204806_uploads },
  { name: 'Migration20261122221348_datasets_images', class: Migration20261122221348_datasets_images },
  { name: 'Migration20261122223030_jobs_versions', class: Migration20261122223030_jobs_versions },
  {
    name: 'Migration20261122232242_projects_models_workflows',
    class: Migration20261122232242_projects_models_workflows,
  },
  { name: 'Migration20261122235521_hosts_worker_keys', class: Migration20261122235521_hosts_worker_keys },
  { name: 'Migration20261123004101_host_jobs', class: Migration20261123004101_host_jobs },
  { name: 'Migration20261123005518_credits', class: Migration20261123005518_credits },
  { name: 'Migration20261123010011_training_runs_job_keys', class: Migration20261123010011_training_runs_job_keys },
  { name: 'Migration20261123013707_host_job_accounting', class: Migration20261123013707_host_job_accounting },
  { name: 'Migration20261124004210_resource_counts', class: Migration20261124004210_resource_counts },
  { name: 'Migration20261124011321_rate_limit_take_count', class: Migration20261124011321_rate_limit_take_count },
  { name: 'Migration20261124030000_job_lifecycle', class: Migration20261124030000_job_lifecycle },
  { name: 'Migration20261124040000_host_sessions', class: Migration20261124040000_host_sessions },
  { name: 'Migration20261124050000_training_run_last_report', class: Migration20261124050000_training_run_last_report },
  { name: 'Migration20261124060000_user_follows', class: Migration20261124060000_user_follows },
  { name: 'Migration20261124070000_model_train_results', class: Migration20261124070000_model_train_results },
  { name: 'Migration20261124090000_job_outputs_exporters', class: Migration20261124090000_job_outputs_exporters },
  { name: 'Migration20261124110000_model_exports', class: Migration20261124110000_model_exports },
  { name: 'Migration20261125000000_deployments', class: Migration20261125000000_deployments },
  { name: 'Migration20261126000000_deployment_cameras', class: Migration20261126000000_deployment_cameras },
  { name: 'Migration20261127000000_control_plane_replicas', class: Migration20261127000000_control_plane_replicas },
  { name: 'Migration20261128000000_host_agent_version', class: Migration20261128000000_host_agent_version },
  { name: 'Migration20261129000000_image_faces_blurred', class: Migration20261129000000_image_faces_blurred },
  { name: 'Migration20261129100000_image_embeddings', class: Migration20261129100000_image_embeddings },
  { name: 'Migration20261129200000_dataset_layouts', class: Migration20261129200000_dataset_layouts },
  { name: 'Migration20261129300000_image_embedding_seq', class: Migration20261129300000_image_embedding_seq },
  { name: 'Migration20261130000000_storage_integrations', class: Migration20261130000000_storage_integrations },
  { name: 'Migration20261201000000_connected_datasets', class: Migration20261201000000_connected_datasets },
  { name: 'Migration20261202000000_storage_providers', class: Migration20261202000000_storage_providers },
  { name: 'Migration20261203000000_staged_reference_version', class: Migration20261203000000_staged_reference_version },
  { name: 'Migration20261204000000_local_integrations', class: Migration20261204000000_local_integrations },
  { name: 'Migration20261205000000_deployment_tokens_sealed', class: Migration20261205000000_deployment_tokens_sealed },
  { name: 'Migration20261206000000_job_lost_attempt_seconds', class: Migration20261206000000_job_lost_attempt_seconds },
  { name: 'Migration20261207000000_console_sessions', class: Migration20261207000000_console_sessions },
  { name: 'Migration20261208000000_layout_point_ordinals', class: Migration20261208000000_layout_point_ordinals },
  { name: 'Migration20261209000000_host_load', class: Migration20261209000000_host_load },
  { name: 'Migration20261209100000_backup_runs', class: Migration20261209100000_backup_runs },
  { name: 'Migration20261209200000_audit_entries', class: Migration20261209200000_audit_entries },
  { name: 'Migration20261210000000_jobs_queue_order', class: Migration20261210000000_jobs_queue_order },
];
