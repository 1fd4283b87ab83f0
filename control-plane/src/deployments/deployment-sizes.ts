// What a deployment may ask for: the spec's 42 regions and its sizes. Hosts take a region from the same list.

/** The spec's deployment regions (the SDK's `deployments.create` lists the same 42). */
export const DEPLOYMENT_REGIONS = [
  'asia-east1',
  'asia-northeast1',
  'asia-northeast2',
  'asia-south1',
  'asia-southeast3',
  'europe-north1',
  'europe-north2',
  'europe-southwest1',
  'europe-west1',
  'europe-west4',
  'europe-west8',
  'europe-west9',
  'me-west1',
  'northamerica-south1',
  'us-central1',
  'us-east1',
  'us-east4',
  'us-east5',
  'us-south1',
  'us-west1',
  'africa-south1',
  'asia-east2',
  'asia-northeast3',
  'asia-southeast1',
  'asia-southeast2',
  'asia-south2',
  'australia-southeast1',
  'australia-southeast2',
  'europe-central2',
  'europe-west10',
  'europe-west12',
  'europe-west2',
  'europe-west3',
  'europe-west6',
  'me-central1',
  'northamerica-northeast1',
  'northamerica-northeast2',
  'southamerica-east1',
  'southamerica-west1',
  'us-west2',
  'us-west3',
  'us-west4',
] as const;
export type DeploymentRegion = (typeof DEPLOYMENT_REGIONS)[number];

export const CPU_SIZES = [1, 2, 4, 6, 8] as const;
export const MEMORY_SIZES_GI = [2, 4, 8, 16, 24, 32] as const;

export interface DeploymentSize {
  cpu: number;
  memoryGi: number;
}

export const DEFAULT_SIZE: DeploymentSize = { cpu: 1, memoryGi: 2 };

/** The default size scales to zero when idle and is not metered; every other size is. */
export const isDefaultSize = (size: DeploymentSize) =>
  size.cpu === DEFAULT_SIZE.cpu && size.memoryGi === DEFAULT_SIZE.memoryGi;
