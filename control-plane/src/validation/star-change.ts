import { z } from 'zod';

/** What a PATCH that sent `starred` answers besides its own fields (the SDK's update types expect both). */
export const StarChange = {
  starred: z.boolean().optional().meta({ description: "When starred was sent: whether the key's user stars it now" }),
  starCount: z.number().int().optional().meta({ description: 'When starred was sent: the stars it has now' }),
};
