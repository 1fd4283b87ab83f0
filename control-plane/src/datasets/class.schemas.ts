import { z } from 'zod';
import { int } from '../validation/integers.ts';

/** A class index: a position in the dataset's class names. */
export const ClassId = int().min(0);

/** Source class name → class index, class name (existing or new) or null to drop its labels: ingest and adopt. */
export const ClassMapping = z.record(z.string().min(1).max(256), z.union([ClassId, z.string().min(1).max(256), z.null()]));

export const ClassMergeBody = z.object({
  sourceClassIds: z.array(ClassId).min(1).max(25_000),
  targetClassId: ClassId,
});
export const ClassDeleteBody = z.object({ classIds: z.array(ClassId).min(1).max(25_000) });

const ClassListAfter = {
  success: z.literal(true),
  classNames: z.array(z.string()).meta({ description: 'The class list after the change; IDs are positions in it' }),
  classColors: z.array(z.string()),
};
export const ClassesMerged = z.object({
  ...ClassListAfter,
  summary: z.object({ mergedClassIds: z.array(z.number().int()), targetClassId: z.number().int().meta({ description: "The target's ID after the sources were removed" }) }),
});
export const ClassesDeleted = z.object({
  ...ClassListAfter,
  summary: z.object({ deletedClassIds: z.array(z.number().int()), deletedAnnotations: z.number().int() }),
});

