import { z } from 'zod';
import { ROLES } from '../account/roles.ts';
import { PASSWORD_MAX } from './password.ts';

export const SessionView = z.object({
  username: z.string(),
  owner: z
    .string()
    .meta({ description: "The session's workspace handle, as in page addresses (/{owner}/datasets/...)" }),
  role: z.enum(ROLES).meta({ description: 'Your role there: the same as your API key for that workspace would carry' }),
  csrfToken: z
    .string()
    .meta({ description: 'Send as X-CSRF-Token with every cookie-authenticated request other than GET/HEAD/OPTIONS' }),
  expiresAt: z.iso.datetime().meta({ description: 'Fixed: SESSION_HOURS after sign-in, not extended by use' }),
});

export const SessionResponse = z.object({ session: SessionView });

export const LoginBody = z.object({
  username: z.string().min(1).max(64),
  password: z.string().min(1).max(PASSWORD_MAX),
  workspace: z
    .string()
    .min(1)
    .max(32)
    .optional()
    .meta({ description: 'A team workspace of yours to act in; default: your personal workspace' }),
});

export const PasswordBody = z.object({
  password: z.string().meta({ description: 'The new password, 8-256 characters' }),
  currentPassword: z
    .string()
    .max(PASSWORD_MAX)
    .optional()
    .meta({ description: 'Required when changing it from a session and a password is set' }),
});

export const Providers = z.object({
  password: z.literal(true),
  oidc: z
    .object({ name: z.string() })
    .nullable()
    .meta({ description: 'Set when the appliance signs in through an OIDC provider (GET /api/auth/oidc/start)' }),
});

export const OidcStartQuery = z.object({
  returnTo: z
    .string()
    .max(2048)
    .optional()
    .meta({ description: 'A path of this appliance to land on after sign-in (default /)' }),
});

export const OidcCallbackQuery = z.looseObject({
  state: z.string().max(256).optional(),
  code: z.string().max(4096).optional(),
  error: z.string().max(256).optional(),
});

export const NoBody = z.unknown();
