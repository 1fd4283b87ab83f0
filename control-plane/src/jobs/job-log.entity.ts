import { defineEntity, p } from '@mikro-orm/core';
import { Job } from './job.entity.ts';

export const LOG_STREAMS = ['stdout', 'stderr'] as const;

/** One output line of a host job, in arrival order (seq). Removed with its job. */
export const JobLogLineSchema = defineEntity({
  name: 'JobLogLine',
  tableName: 'job_logs',
  indexes: [{ properties: ['job', 'seq'] }],
  properties: {
    seq: p.bigint('number').primary().autoincrement(),
    job: () => p.manyToOne(Job).deleteRule('cascade'),
    stream: p.enum(LOG_STREAMS),
    line: p.text(),
    at: p.datetime(),
  },
});
export class JobLogLine extends JobLogLineSchema.class {}
JobLogLineSchema.setClass(JobLogLine);
