import { z } from 'zod';

/** Usernames and workspace handles: 4-32 characters, lowercase alphanumeric segments joined by single hyphens. */
export const HANDLE_PATTERN = /^(?=.{4,32}$)[a-z0-9]+(-[a-z0-9]+)*$/;

export const Handle = z
  .string()
  .regex(HANDLE_PATTERN, 'must be 4-32 lowercase letters or digits, with single hyphens between segments')
  .meta({ description: 'Username or workspace handle', example: 'acme-vision' });

/** URL names of datasets, projects, models and deployments: the same pattern, up to 128 characters. */
export const Slug = z
  .string()
  .max(128)
  .regex(/^[a-z0-9]+(-[a-z0-9]+)*$/, 'must be lowercase letters or digits with single hyphens, up to 128 characters');
