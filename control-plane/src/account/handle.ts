import { z } from 'zod';

/** Usernames and workspace handles: 4-32 characters, lowercase alphanumeric segments joined by single hyphens. */
export const HANDLE_PATTERN = /^(?=.{4,32}$)[a-z0-9]+(-[a-z0-9]+)*$/;
/** Lowercase alphanumeric segments joined by single hyphens: handles and URL names alike. */
const SEGMENTS = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const HANDLE_RULE = {
  error: 'must be 4-32 lowercase letters or digits, with single hyphens between segments',
  abort: true,
};

// The length as its own checks rather than HANDLE_PATTERN's lookahead, so the OpenAPI document says it in
// minLength/maxLength, which clients and request generators understand.
export const Handle = z
  .string()
  .min(4, HANDLE_RULE)
  .max(32, HANDLE_RULE)
  .regex(SEGMENTS, HANDLE_RULE)
  .meta({ description: 'Username or workspace handle', example: 'acme-vision' });

/** URL names of datasets, projects, models and deployments: the same pattern, up to 128 characters. */
export const Slug = z
  .string()
  .max(128)
  .regex(SEGMENTS, 'must be lowercase letters or digits with single hyphens, up to 128 characters');
