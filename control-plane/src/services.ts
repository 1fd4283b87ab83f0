import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppConfig } from '@vp/config';
import { AccountService, type ResourceCounters } from './account/account.service.ts';
import { ApiKeyService } from './auth/api-key.service.ts';
import type { Storage } from './storage/storage.ts';
import { UploadService } from './uploads/upload.service.ts';

export interface ServiceDeps {
  config: AppConfig;
  /** Absent where no file is touched (vpctl, first-start bootstrap). */
  storage?: Storage;
  counters?: ResourceCounters;
}

/** The services of one request (or job, or CLI command), all on the same EntityManager fork. */
export class Services {
  readonly em: EntityManager;
  private readonly deps: ServiceDeps;

  constructor(em: EntityManager, deps: ServiceDeps) {
    this.em = em;
    this.deps = deps;
  }

  get account(): AccountService {
    return new AccountService(this.em, this.deps.config.region, this.deps.counters);
  }

  get apiKeys(): ApiKeyService {
    return new ApiKeyService(this.em);
  }

  get storage(): Storage {
    if (!this.deps.storage) throw new Error('no blob store in this process');
    return this.deps.storage;
  }

  get uploads(): UploadService {
    return new UploadService(this.em, this.storage);
  }
}
